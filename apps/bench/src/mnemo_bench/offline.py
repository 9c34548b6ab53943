"""Retrieval metrics of several retrievers side by side on the same questions, resumable."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mnemo_bench.cases import Case, Question
from mnemo_bench.metrics import KS, evaluate, mean_metrics
from mnemo_bench.retrievers import Retriever, SkipRetriever
from mnemo_bench.state import RunState

DEPTH = max(KS)


@dataclass(frozen=True)
class Scope:
    """Which questions count: those with evidence, in ``categories`` (all when None)."""

    categories: frozenset[str] | None = None

    def includes(self, question: Question) -> bool:
        """Whether ``question`` is scored."""
        if not question.evidence:
            return False
        return self.includes_judged(question)

    def includes_judged(self, question: Question) -> bool:
        """Whether ``question`` is answered and graded (evidence is not needed for that)."""
        return self.categories is None or question.category in self.categories


async def run_retrieval(
    cases: Sequence[Case],
    retrievers: Sequence[Retriever],
    state: RunState,
    scope: Scope,
    skipped: dict[str, str],
) -> dict[str, Any]:
    """Score every retriever on every in-scope question; ``skipped`` collects why some could not run."""
    active = [r for r in retrievers if r.name not in skipped]
    for n, case in enumerate(cases, 1):
        questions = [q for q in case.questions if scope.includes(q)]
        for retriever in list(active):
            todo = [q for q in questions if state.result(f"{retriever.name}|{q.id}") is None]
            if not todo:
                continue
            try:
                await retriever.prepare(case)
                for i, q in enumerate(todo, 1):
                    got = await retriever.retrieve(case, q, DEPTH)
                    state.append(_row(retriever.name, case, q, got.ids, got.tokens))
                    _progress(f"[{n}/{len(cases)}] {case.id} {retriever.name}", i, len(todo))
            except SkipRetriever as why:
                skipped[retriever.name] = str(why)
                active.remove(retriever)
                print(f"\n  {retriever.name} skipped: {why}", file=sys.stderr)
        print(file=sys.stderr)
    # Only these cases' rows: the state may hold other cases from runs of another split.
    asked = {q.id for c in cases for q in c.questions}
    rows = [r for r in state.rows() if r["question"] in asked]
    return summarise(rows, [r.name for r in retrievers], skipped)


def _row(name: str, case: Case, q: Question, ids: Sequence[str], tokens: int) -> dict[str, Any]:
    return {
        "key": f"{name}|{q.id}",
        "retriever": name,
        "case": case.id,
        "question": q.id,
        "category": q.category,
        "evidence": list(q.evidence),
        # Kept whole: a context blob's evidence is everything in it, not only its first ids.
        "retrieved": list(ids),
        "tokens": tokens,
        **evaluate(ids, q.evidence),
    }


def _progress(label: str, i: int, total: int) -> None:
    width = 24
    filled = width * i // max(total, 1)
    bar = "#" * filled + "." * (width - filled)
    if i == total or i % max(total // 20, 1) == 0:
        print(f"\r  {label} [{bar}] {i}/{total}", end="", file=sys.stderr, flush=True)


def summarise(
    rows: Sequence[dict[str, Any]], names: Sequence[str], skipped: dict[str, str]
) -> dict[str, Any]:
    """Mean metrics and tokens per retriever, per category, and the question count."""
    retrievers: dict[str, dict[str, float]] = {}
    by_category: dict[str, dict[str, dict[str, float]]] = {}
    questions: set[str] = set()
    for name in names:
        mine = [r for r in rows if r["retriever"] == name]
        if not mine:
            continue
        metric_keys = sorted(
            {k for r in mine for k, v in r.items() if "@" in k and isinstance(v, float)}
        )
        metrics = [{k: float(r[k]) for k in metric_keys} for r in mine]
        retrievers[name] = {
            **mean_metrics(metrics),
            "tokens": sum(int(r["tokens"]) for r in mine) / len(mine),
        }
        retrievers[name]["questions"] = len(mine)
        questions.update(r["question"] for r in mine)
        for cat in sorted({str(r["category"]) for r in mine}):
            cat_rows = [m for m, r in zip(metrics, mine, strict=True) if r["category"] == cat]
            by_category.setdefault(name, {})[cat] = {
                **mean_metrics(cat_rows),
                "questions": len(cat_rows),
            }
    return {
        "retrievers": retrievers,
        "questions": len(questions),
        "by_category": by_category,
        "skipped": skipped,
    }
