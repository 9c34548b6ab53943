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
from mnemo_bench.report import retrieval_table
from mnemo_bench.retrievers import BM25Retriever, DenseRetriever, Retriever
from mnemo_bench.state import RunState
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.tokens import TokenCounter

CONTEXT_BUDGETS = (2000, 8000)
MNEMO_NAMES = ("mnemo", *(f"context@{t}" for t in CONTEXT_BUDGETS))


def scope_for(benchmark: str, with_adversarial: bool) -> Scope:
    """LoCoMo scores categories 1-4 unless adversarial questions are asked for; others all."""
    if benchmark == "locomo":
        cats = {"1", "2", "3", "4", *(("5",) if with_adversarial else ())}
        return Scope(frozenset(cats))
    return Scope()


def server_problem(url: str) -> str | None:
    """Why the Mnemo server cannot be used, or None when it answers."""
    try:
        httpx.get(f"{url}/openapi.json", timeout=5.0).raise_for_status()
    except httpx.HTTPError as exc:
        return f"no Mnemo server at {url} ({type(exc).__name__})"
    if not os.environ.get("DATABASE_URL"):
        return "DATABASE_URL is unset (provenance is read from Mnemo's Postgres, read-only)"
    return None


def _mnemo_retrievers(
    args: argparse.Namespace, state: RunState, count: TokenCounter
) -> list[Retriever]:
    from mnemo_bench.mnemo_retrieval import ContextRetriever, MnemoRetriever, MnemoWorkspaces
    from mnemo_bench.provenance import Provenance

    spaces = MnemoWorkspaces(args.url, args.benchmark, state)
    prov = Provenance(os.environ["DATABASE_URL"])
    return [
        MnemoRetriever(spaces, prov, count),
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
    problem = "--no-mnemo given" if args.no_mnemo else server_problem(args.url)
    if problem is None:
        retrievers += _mnemo_retrievers(args, state, count)
    else:
        skipped = dict.fromkeys(MNEMO_NAMES, problem)
        print(f"skipping {', '.join(MNEMO_NAMES)}: {problem}", file=sys.stderr)
    summary = await run_retrieval(
        cases, retrievers, state, scope_for(args.benchmark, args.with_adversarial), skipped
    )
    summary["benchmark"] = args.benchmark
    table = retrieval_table(summary)
    (out / "retrieval.md").write_text(table + "\n")
    print(table)
    return summary
