"""Fitting the retrieval engine's fusion weights on the tuning half of the dev data, and only there.

``python -m mnemo_cli.tune_retrieval locomo beam [--split tuning]`` reads the workspaces that
``mnemo bench <benchmark> --offline`` ingested into the running stack, gathers every question's
candidate lists once with the engine the services run, then ranks them under other weights (a
pure computation) by coordinate descent on Recall@10 (the mean over the benchmarks of each
one's mean, so that every benchmark counts alike), and prints what it found with the
per-category figures. ``--slice`` fits the ranking of get_context's representation slice
instead (``tune_slice``). ``--split held-out`` only evaluates (the weights in the code, or those
given with ``--weights``): the held-out half is never searched over.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mnemo_bench.cases import Case, Question
from mnemo_bench.cli import default_data, load_cases, split_cases
from mnemo_bench.metrics import dedupe, recall_at
from mnemo_bench.mnemo_client import workspace_id
from mnemo_bench.offline_app import scope_for
from mnemo_context.app import build_engine
from mnemo_context.engine import RetrievalEngine
from mnemo_context.fusion import DEFAULT_WEIGHTS, Weights
from mnemo_context.ranking import Gathered, rank_messages
from mnemo_context.understanding import Understanding
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.pg import Pool, open_pool
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import recorded_stack
from mnemo_schema.retrieval import Component, RetrievalQuery

# The values each weight may take in the search; the list weight of BM25 passages stays 1.
GRID: dict[str, tuple[float, ...]] = {
    "dense": (0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
    "facts.lexical": (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5),
    "facts.dense": (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5),
    "named": (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
    "window": (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
    "current": (0.0, 0.15, 0.3, 0.6),
    "k": (5.0, 10.0, 20.0, 40.0, 60.0, 100.0),
    "passages.dense": (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3),
    "passages.lexical": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0),
}


@dataclass(frozen=True)
class Sample:
    question: Question
    gathered: Gathered
    turn_of: dict[str, str]


def with_value(w: Weights, name: str, value: float) -> Weights:
    """``w`` with one weight (a list's, a boost's, or k) set to ``value``."""
    if name == "named":
        return replace(w, named=value)
    if name == "window":
        return replace(w, window=value)
    if name == "current":
        return replace(w, current=value)
    if name == "k":
        return replace(w, k=int(value))
    if name == "observation_k":
        return replace(w, observation_k=int(value))
    if name == "spread":
        return replace(w, spread=value)
    if name.startswith("passages."):
        return replace(w, passages={**w.passages, name.removeprefix("passages."): value})
    return replace(w, lists={**w.lists, name: value})


def recall10(
    samples: Sequence[Sample], w: Weights, off: frozenset[Component] = frozenset()
) -> float:
    """Mean evidence Recall@10 of the engine's message ranking under ``w``."""
    total = 0.0
    for s in samples:
        g = s.gathered
        if off:
            u = g.understood
            u = Understanding(
                frozenset() if "names" in off else u.named,
                () if "time" in off else u.windows,
                False if "recency" in off else u.current,
            )
            f = g.found
            kept = {n: h for n, h in f.passages.items() if n not in off}
            seen = {n: r for n, r in f.observations.items() if n not in off}
            g = Gathered(replace(f, passages=kept, observations=seen), u, g.on - off)
        order = rank_messages(g, w)[0]
        turns = dedupe(s.turn_of[m] for m in order if m in s.turn_of)
        total += recall_at(turns, s.question.evidence, 10)
    return total / max(len(samples), 1)


def joint(groups: Sequence[Sequence[Sample]], w: Weights) -> float:
    """The mean over ``groups`` (one per benchmark) of each group's Recall@10."""
    return sum(recall10(g, w) for g in groups) / max(len(groups), 1)


def descend(
    groups: Sequence[Sequence[Any]],
    start: Weights,
    passes: int = 3,
    grid: Mapping[str, Sequence[float]] = GRID,
    score_of: Callable[[Sequence[Sequence[Any]], Weights], float] = joint,
) -> tuple[Weights, float]:
    """Coordinate descent over ``grid`` from ``start``: each weight in turn to its best value
    for ``score_of`` (by default the joint Recall@10 of the message ranking)."""
    best, score = start, score_of(groups, start)
    for _ in range(passes):
        moved = False
        for name, values in grid.items():
            for value in values:
                trial = with_value(best, name, value)
                got = score_of(groups, trial)
                if got > score + 1e-9:
                    best, score, moved = trial, got, True
        if not moved:
            break
    return best, score


def by_category(samples: Sequence[Sample], w: Weights) -> dict[str, tuple[int, float]]:
    """Questions and Recall@10 per category."""
    cats: dict[str, list[Sample]] = {}
    for s in samples:
        cats.setdefault(s.question.category, []).append(s)
    return {c: (len(ss), recall10(ss, w)) for c, ss in sorted(cats.items())}


async def turns_of(pool: Pool, ws: str) -> dict[str, str]:
    """The dataset turn id of each of the workspace's messages (as the bench posted them)."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, metadata->>'turn_id' AS turn FROM messages WHERE workspace = %s", (ws,)
        )
        rows: list[dict[str, Any]] = await cur.fetchall()
    return {r["id"]: r["turn"] for r in rows if r["turn"]}


@dataclass(frozen=True)
class Asked:
    """One in-scope question of an ingested case, and where to ask it."""

    engine: RetrievalEngine
    case: Case
    workspace: str
    question: Question
    turn_of: dict[str, str]


async def ingested_questions(benchmark: str, split: str) -> AsyncIterator[Asked]:
    """Every in-scope question of ``split`` whose case the stack ``mnemo up`` started holds,
    with the retrieval engine over that stack."""
    urls = recorded_stack(InfraSettings().state_dir)
    database = os.environ.get("DATABASE_URL") or urls.get("database_url")
    if not database:
        raise SystemExit("no stack: run `make up` and `mnemo bench <benchmark> --offline` first")
    cases = split_cases(
        benchmark, load_cases(benchmark, default_data(benchmark), None, None), split
    )
    scope = scope_for(benchmark, False)
    pool = await open_pool(database, min_size=1, max_size=8)
    memory = await open_memory(MemorySettings(), InfraSettings().state_dir.resolve(), pool)
    engine = build_engine(pool, memory)
    try:
        for case in cases:
            ws = workspace_id(benchmark, case)
            turn_of = await turns_of(pool, ws)
            if not turn_of:
                print(f"{case.id}: not ingested (run the offline bench first)", file=sys.stderr)
                continue
            for q in case.questions:
                if scope.includes(q):
                    yield Asked(engine, case, ws, q, turn_of)
    finally:
        await memory.close()
        await pool.close()


async def gather(benchmark: str, split: str) -> list[Sample]:
    """Every in-scope question's candidates, from the stack ``mnemo up`` started."""
    samples: list[Sample] = []
    async for a in ingested_questions(benchmark, split):
        # As the offline bench asks: its 20 best messages.
        g = await a.engine.gather(a.workspace, RetrievalQuery(query=a.question.text, messages=20))
        samples.append(Sample(a.question, g, a.turn_of))
    return samples


def _report(label: str, samples: Sequence[Sample], w: Weights, out: Callable[[str], None]) -> None:
    out(f"{label}: R@10 {recall10(samples, w):.3f} over {len(samples)} questions")
    for cat, (n, r) in by_category(samples, w).items():
        out(f"  {cat:28} n={n:4d}  R@10 {r:.3f}")
    offs: tuple[Component, ...] = ("lexical", "dense", "facts", "names", "time", "recency")
    for off in offs:
        out(f"  without {off:20} R@10 {recall10(samples, w, frozenset({off})):.3f}")


def weights_json(w: Weights) -> dict[str, Any]:
    """``w`` as JSON (what ``--weights`` reads)."""
    return {
        "lists": dict(w.lists),
        "named": w.named,
        "window": w.window,
        "current": w.current,
        "k": w.k,
        "observation_k": w.observation_k,
        "passages": dict(w.passages),
        "spread": w.spread,
    }


def _weights(raw: dict[str, Any]) -> Weights:
    """Weights from ``weights_json``'s form; what it leaves out keeps the code's value."""
    return replace(
        DEFAULT_WEIGHTS, **{k: v for k, v in raw.items() if k in weights_json(DEFAULT_WEIGHTS)}
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mnemo_cli.tune_retrieval")
    parser.add_argument("benchmarks", nargs="+", choices=["locomo", "beam"])
    parser.add_argument("--split", default="tuning", choices=["tuning", "held-out", "all"])
    parser.add_argument("--weights", type=Path, help="JSON of weights to evaluate, not search")
    parser.add_argument(
        "--slice",
        action="store_true",
        help="fit get_context's representation slice, not the message ranking",
    )
    args = parser.parse_args(argv)
    start = _weights(json.loads(args.weights.read_text())) if args.weights else DEFAULT_WEIGHTS
    if args.slice:
        from mnemo_cli.tune_slice import fit_slice

        return fit_slice(args.benchmarks, args.split, start, fit=not args.weights)
    groups = {b: asyncio.run(gather(b, args.split)) for b in args.benchmarks}
    for name, samples in groups.items():
        _report(f"{name} {args.split}, current weights", samples, start, print)
    if args.split == "tuning" and not args.weights:
        fitted, _ = descend(list(groups.values()), start)
        for name, samples in groups.items():
            _report(f"{name} {args.split}, fitted on the tuning split", samples, fitted, print)
        print(json.dumps(weights_json(fitted)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
