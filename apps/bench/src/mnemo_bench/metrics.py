"""Retrieval metrics over evidence ids, and reciprocal rank fusion."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

KS = (5, 10, 20)


def dedupe(ids: Iterable[str]) -> list[str]:
    """``ids`` in first-seen order without repeats."""
    return list(dict.fromkeys(ids))


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` distinct retrieved ids."""
    rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel.intersection(dedupe(ranked)[:k])) / len(rel)


def ndcg_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Binary-relevance NDCG of the first ``k`` distinct retrieved ids."""
    rel = set(relevant)
    if not rel:
        return 0.0
    dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(dedupe(ranked)[:k]) if r in rel)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / ideal


def rrf(*rankings: Sequence[str], k: int = 60) -> list[str]:
    """Reciprocal rank fusion of several rankings of ids (Cormack et al., k = 60)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, ident in enumerate(dedupe(ranking)):
            scores[ident] = scores.get(ident, 0.0) + 1 / (k + rank + 1)
    return sorted(scores, key=lambda i: -scores[i])


def evaluate(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """Recall@k and NDCG@k for every k in ``KS``, and recall over everything retrieved."""
    out: dict[str, float] = {"recall@all": recall_at(ranked, relevant, len(ranked))}
    for k in KS:
        out[f"recall@{k}"] = recall_at(ranked, relevant, k)
        out[f"ndcg@{k}"] = ndcg_at(ranked, relevant, k)
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """The per-key mean of metric rows (keys of the first row)."""
    if not rows:
        return {}
    keys = dict.fromkeys(k for r in rows for k in r)
    return {key: sum(r.get(key, 0.0) for r in rows) / len(rows) for key in keys}
