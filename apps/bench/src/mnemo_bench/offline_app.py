"""Composition of the offline retrieval run: builds the retrievers that can run here."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from mnemo_bench.cases import Case
from mnemo_bench.offline import Scope, run_retrieval
from mnemo_bench.report import ablation_table, category_table, retrieval_table
from mnemo_bench.retrievers import BM25Retriever, DenseRetriever, Retriever
from mnemo_bench.state import RunState
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import recorded_stack
from mnemo_runtime.tokens import TokenCounter
from mnemo_schema.retrieval import COMPONENTS, Component

CONTEXT_BUDGETS = (2000, 8000)
# Each switched off in turn; a reranker is not configured offline, so it has nothing to show.
ABLATED: tuple[Component, ...] = tuple(c for c in COMPONENTS if c != "rerank")
MNEMO_NAMES = (
    "mnemo",
    *(f"mnemo without {c}" for c in ABLATED),
    *(f"context@{t}" for t in CONTEXT_BUDGETS),
)


def scope_for(benchmark: str, with_adversarial: bool) -> Scope:
    """LoCoMo scores categories 1-4 unless adversarial questions are asked for; others all."""
    if benchmark == "locomo":
        cats = {"1", "2", "3", "4", *(("5",) if with_adversarial else ())}
        return Scope(frozenset(cats))
    return Scope()


def stack_urls() -> dict[str, str]:
    """Where the Mnemo to measure runs: the environment (MNEMO_URL, DATABASE_URL, NATS_URL),
    else what ``mnemo up`` recorded under MNEMO_STATE_DIR."""
    recorded = recorded_stack(InfraSettings().state_dir)
    urls = {
        "gateway_url": os.environ.get("MNEMO_URL") or recorded.get("gateway_url", ""),
        "database_url": os.environ.get("DATABASE_URL") or recorded.get("database_url", ""),
        "nats_url": os.environ.get("NATS_URL") or recorded.get("nats_url", ""),
    }
    return {k: v for k, v in urls.items() if v}


def server_problem(url: str, database_url: str | None) -> str | None:
    """Why the Mnemo server cannot be used, or None when it answers."""
    try:
        httpx.get(f"{url}/openapi.json", timeout=5.0).raise_for_status()  # public: no key
    except httpx.HTTPError as exc:
        return f"no Mnemo server at {url} ({type(exc).__name__}); start one with `make up`"
    if not database_url:
        return (
            "no Postgres found: `make up` records it, or set DATABASE_URL "
            "(provenance is read from Mnemo's Postgres, read-only)"
        )
    return None


def _mnemo_retrievers(
    args: argparse.Namespace, state: RunState, count: TokenCounter, urls: dict[str, str]
) -> list[Retriever]:
    from mnemo_bench.mnemo_retrieval import (
        AblatedRetriever,
        ContextRetriever,
        MnemoRetriever,
        MnemoWorkspaces,
    )
    from mnemo_bench.provenance import Provenance

    spaces = MnemoWorkspaces(args.url, args.benchmark, state)
    prov = Provenance(urls["database_url"])
    ablated: list[Retriever] = []
    if args.ablation and "nats_url" in urls:
        ablated = [AblatedRetriever(spaces, urls["nats_url"], frozenset({c})) for c in ABLATED]
    return [
        MnemoRetriever(spaces, count),
        *ablated,
        *(ContextRetriever(spaces, prov, t, count) for t in CONTEXT_BUDGETS),
    ]


async def run_offline(args: argparse.Namespace, cases: list[Case], out: Path) -> dict[str, Any]:
    """Recall@k / NDCG@k of BM25, dense and (when a server runs) Mnemo's retrievers."""
    state = RunState(out, "retrieval.jsonl")
    count = TokenCounter()
    retrievers: list[Retriever] = [
        BM25Retriever(count),
        DenseRetriever(build_embedder("minilm", workers=2), count),
    ]
    skipped: dict[str, str] = {}
    urls = stack_urls()
    problem = (
        "--no-mnemo given" if args.no_mnemo else server_problem(args.url, urls.get("database_url"))
    )
    if problem is None:
        retrievers += _mnemo_retrievers(args, state, count, urls)
    else:
        skipped = dict.fromkeys(MNEMO_NAMES, problem)
        print(f"skipping {', '.join(MNEMO_NAMES)}: {problem}", file=sys.stderr)
    try:
        summary = await run_retrieval(
            cases, retrievers, state, scope_for(args.benchmark, args.with_adversarial), skipped
        )
    finally:
        for r in retrievers:
            close = getattr(r, "close", None)
            if close is not None:
                await close()
    summary["benchmark"] = args.benchmark
    summary["split"] = args.split
    summary["cases"] = [c.id for c in cases]
    tables = [retrieval_table(summary), category_table(summary), ablation_table(summary)]
    text = "\n\n".join(t for t in tables if t)
    (out / "retrieval.md").write_text(text + "\n")
    print(text)
    return summary
