"""Composition of ``mnemo bench deriver``: the deriver in process, then offline or judged scores."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mnemo_bench.cases import Case
from mnemo_bench.deriver.judged import Judged, judge_trace
from mnemo_bench.deriver.judges import (
    JUDGE_STAGE,
    CoverageLabels,
    GoldFacts,
    MolecularScores,
    QualityVerdict,
    coverage_request,
    gold_request,
    molecular_request,
    quality_request,
)
from mnemo_bench.deriver.matcher import Matcher
from mnemo_bench.deriver.offline import OfflineCounts, score_offline
from mnemo_bench.deriver.references import read_references
from mnemo_bench.deriver.report import JUDGED_COLUMNS, OFFLINE_COLUMNS, table, worst_list
from mnemo_bench.deriver.run import split_of, traces
from mnemo_bench.deriver.traces import batches, new_trace, session_messages, speakers_of
from mnemo_bench.state import RunState
from mnemo_deriver.domain import prepare, request
from mnemo_deriver.local import local_deriver
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.models import ChatModel, ModelRequest, Stage
from mnemo_runtime.models.config import ModelChoice, ModelSettings, build_model
from mnemo_runtime.models.local import local_model
from mnemo_runtime.tokens import TokenCounter


def model_settings(args: argparse.Namespace) -> ModelSettings:
    """The model configuration with ``--deriver-model`` and ``--judge-model`` applied."""
    overrides = {
        stage.value: ModelChoice.parse(choice)
        for stage, choice in ((Stage.DERIVER, args.deriver_model), (JUDGE_STAGE, args.judge_model))
        if choice
    }
    return ModelSettings().model_copy(update=overrides)


def deriver_model(settings: ModelSettings) -> ChatModel:
    """The deriver the configuration selects; the local reasoner without a provider key."""
    return build_model(Stage.DERIVER, settings, local_factory=local_deriver)


POOLED = ("tuning (pooled)", "held-out (pooled)", "all (pooled)")


def _pooled(counts: dict[str, Any], new: Any) -> dict[str, Any]:
    """Per-conversation counts, then a pooled row per split present and one overall."""
    rows: dict[str, Any] = dict(counts)
    for case_id, c in counts.items():
        for name in (f"{split_of(case_id)} (pooled)", "all (pooled)"):
            rows.setdefault(name, new()).add(c)
    return {k: rows[k] for k in [*counts, *(p for p in POOLED if p in rows)]}


async def run_offline(
    args: argparse.Namespace, cases: list[Case], out: Path, deriver: ChatModel | None = None
) -> dict[str, Any]:
    """Offline Coverage against LoCoMo's reference facts, grounding precision, density."""
    settings = model_settings(args)
    model = deriver or deriver_model(settings)
    found = await traces(model, cases, RunState(out, "traces.jsonl"), DeriverSettings())
    references = read_references(args.data) if args.corpus == "locomo" else {}
    matcher = Matcher(build_embedder("minilm", workers=2))
    rows = _pooled(await score_offline(found, references, matcher), OfflineCounts)
    shown = {k: v.row() for k, v in rows.items()}
    summary = {
        "benchmark": f"deriver-{args.corpus}",
        "deriver": settings.choice(Stage.DERIVER).model_dump(),
        "matcher": matcher.thresholds.__dict__,
        "rows": shown,
    }
    text = table(shown, OFFLINE_COLUMNS)
    note = (
        "Coverage against LoCoMo's reference facts (matcher: MiniLM cosine + lexical overlap); "
        "tuning: conv-26, conv-30; held-out: the rest."
        if references
        else f"{args.corpus} has no reference facts: grounding and density only."
    )
    (out / "deriver-offline.md").write_text(f"{text}\n\n{note}\n")
    print(f"{text}\n\n{note}")
    return summary


def _describe(req: ModelRequest, model: str, output: type[BaseModel] | None = None) -> str:
    sizes = ", ".join(f"{m.role} {len(m.text())} chars" for m in req.messages)
    head = req.system[:70].replace("\n", " ")
    # A judge's tool is added by ``structured`` at call time: its name is its output's.
    tool = output.__name__ if output is not None else ", ".join(t.name for t in req.tools)
    return (
        f"  model={model} stage={req.stage.value} forced tool={tool}\n"
        f"    system: {head}...\n    messages: {sizes}"
    )


def dry_run(args: argparse.Namespace, cases: list[Case]) -> None:
    """The requests a judged run would make, per conversation; no model is called."""
    settings = model_settings(args)
    derive, judge = settings.choice(Stage.DERIVER).model, settings.choice(JUDGE_STAGE).model
    count, deriver_settings = TokenCounter(), DeriverSettings()
    for case in cases:
        units = [(s, t) for s in case.sessions for t in speakers_of(s)]
        n_batches = 0
        first: ModelRequest | None = None
        for session, target in units:
            for batch in batches(session_messages(case, session, count), target, deriver_settings):
                n_batches += 1
                first = first or request(prepare(batch), deriver_settings.max_output_tokens)
        print(
            f"{case.id}: {len(units)} units (speaker x session), {n_batches} deriver batches, "
            f"up to {4 * len(units)} judge calls"
        )
        if first is not None:
            print("  deriver (per batch):\n" + _describe(first, derive))
        session, target = units[0]
        trace = new_trace(case, session, target, session_messages(case, session, count))
        obs = ["<observation>"]
        judged: tuple[tuple[str, ModelRequest, type[BaseModel]], ...] = (
            ("gold facts", gold_request(trace), GoldFacts),
            ("coverage labels", coverage_request(["<gold fact>"], obs), CoverageLabels),
            ("quality flags", quality_request(trace, obs), QualityVerdict),
            ("molecular", molecular_request(obs), MolecularScores),
        )
        print(f"  judges, on {trace.key} (observations and gold facts as placeholders):")
        for name, req, output in judged:
            print(f"  judge, {name} (per unit):\n" + _describe(req, judge, output))


async def run_judged(
    args: argparse.Namespace,
    cases: list[Case],
    out: Path,
    deriver: ChatModel | None = None,
    judge: ChatModel | None = None,
) -> dict[str, Any] | None:
    """Traces, then every judge over each; with ``--dry-run`` only the requests."""
    if args.dry_run:
        dry_run(args, cases)
        return None
    settings = model_settings(args)
    if judge is None and settings.choice(JUDGE_STAGE).provider == "local":
        print(
            "no judge model configured: the local heuristic reasoner cannot judge; set "
            "ANTHROPIC_API_KEY or --judge-model",
            file=sys.stderr,
        )
        return None
    model = deriver or deriver_model(settings)
    found = await traces(model, cases, RunState(out, "traces.jsonl"), DeriverSettings())
    judge = judge or build_model(JUDGE_STAGE, settings, local_factory=local_model)
    state = RunState(out, "judged.jsonl")
    per_case: dict[str, Judged] = {}
    for trace in found:
        row = state.result(trace.key)
        if row is None:
            judged = await judge_trace(judge, trace)
            state.append({"key": trace.key, **judged.to_row()})
        else:
            judged = Judged.from_row(row)
        per_case.setdefault(trace.case_id, Judged()).add(judged)
    rows = _pooled(per_case, Judged)
    shown = {k: judged_row(v) for k, v in rows.items()}
    summary = {"benchmark": f"deriver-{args.corpus}", "rows": shown}
    text = table(shown, JUDGED_COLUMNS)
    worst = worst_list(rows["all (pooled)"].worst)
    (out / "deriver-judged.md").write_text(f"{text}\n\n{worst}\n")
    print(f"{text}\n\n{worst}")
    return summary


def judged_row(j: Judged) -> dict[str, Any]:
    """The table's row for judged counts."""
    c, q = j.coverage, j.quality
    return {
        "gold": c.gold,
        "R": c.recall,
        "R_w": c.weighted_recall,
        "F1": c.f1,
        "observations": q.observations,
        "quality": q.score,
        "redundant": q.redundant,
        "fixated": q.fixated,
        "temporal": q.temporal,
        "molecular": j.molecular.mean,
        "faults": sum(j.faults.values()),
        "fault_kinds": {k: v for k, v in j.faults.items() if v},
    }
