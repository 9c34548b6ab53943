"""Ranking what the engine gathered: fused lists, boosts, best passages, spread. No I/O.

``rank_messages`` and ``rank_observations`` turn a question's candidate lists (``Found``) and
its understanding into one ranking each; the tuning tools run them over gathered candidates
under other weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemo_context.fusion import Facts, Weights, boost, fuse, ranked, spread
from mnemo_context.ports import Confinement, ObservationRow, PassageHit
from mnemo_context.understanding import Understanding
from mnemo_schema.retrieval import Component


@dataclass
class Found:
    """Everything the lists found, before fusion."""

    passages: dict[str, list[PassageHit]] = field(default_factory=dict)
    observations: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, ObservationRow] = field(default_factory=dict)
    distances: dict[str, float] = field(default_factory=dict)
    citing: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Gathered:
    """A query's candidates, what its question says, and the components it runs with."""

    found: Found
    understood: Understanding
    on: frozenset[Component]
    confine: Confinement = field(default_factory=Confinement)


def rank_messages(
    g: Gathered, weights: Weights
) -> tuple[list[str], dict[str, float], dict[str, list[str]], dict[str, PassageHit]]:
    """Message ids best first, their scores, the lists that found each, and its best passage."""
    found = g.found
    lists: dict[str, list[str]] = {
        name: by_best_passage(hits, weights.passages.get(name, 0.0))
        for name, hits in found.passages.items()
    }
    # A message's passage is the one ranked highest by any list (scores are not comparable
    # across lists, ranks are).
    best: dict[str, tuple[int, PassageHit]] = {}
    facts: dict[str, Facts] = {}
    for hits in found.passages.values():
        for rank, h in enumerate(hits):
            if h.message_id not in best or rank < best[h.message_id][0]:
                best[h.message_id] = (rank, h)
            facts.setdefault(h.message_id, Facts(h.peer_id, h.created_at))
    if "facts" in g.on:
        for name, ranking in found.observations.items():
            lists[f"facts.{name}"] = [m for i in ranking for m in found.rows[i].source_message_ids]
            for i in ranking:
                row = found.rows[i]
                for m in row.source_message_ids:
                    facts.setdefault(m, Facts(row.observed, row.at))
    scores, found_by = fuse(lists, weights)
    scores = boost(scores, facts, g.understood, weights)
    return ranked(scores), scores, found_by, {m: h for m, (_, h) in best.items()}


def by_best_passage(hits: Sequence[PassageHit], penalty: float) -> list[str]:
    """Message ids by their best passage's score less ``penalty`` times the log of their
    passages (0: by the best passage alone)."""
    best: dict[str, float] = {}
    for h in hits:
        score = h.score - penalty * math.log(max(h.parts, 1))
        if score > best.get(h.message_id, -math.inf):
            best[h.message_id] = score
    return sorted(best, key=lambda m: -best[m])


def rank_observations(
    g: Gathered,
    weights: Weights,
    max_distance: float | None = None,
    *,
    diverse: bool = False,
    needed: int | None = None,
) -> tuple[list[str], dict[str, float], dict[str, list[str]]]:
    """Observation ids best first (none beyond ``max_distance``; ``diverse``: spread over the
    messages they rest on), scores, and their lists. ``needed``: only so many of the best are
    asked for, and the ids may stop there."""
    found = g.found
    lists: dict[str, list[str]] = dict(found.observations)
    if "facts" in g.on:
        for name, hits in found.passages.items():
            lists[f"facts.{name}"] = [o for h in hits for o in found.citing.get(h.message_id, ())]
    scores, found_by = fuse(lists, weights, weights.observation_k)
    facts = {i: Facts(r.observed, r.at) for i, r in found.rows.items()}
    scores = boost(scores, facts, g.understood, weights)
    order = [i for i in ranked(scores) if i in found.rows]

    def near(i: str) -> bool:
        # Only a distance that was measured can be vouched for.
        return max_distance is None or found.distances.get(i, 2.0) <= max_distance

    if diverse:
        sources = {i: found.rows[i].source_message_ids for i in order}
        order = spread(order, scores, sources, weights.spread, needed=needed, counts=near)
    if max_distance is not None:
        order = [i for i in order if near(i)]
    return order, scores, found_by
