"""Fusing ranked lists into one ranking, and what a question's understanding adds. No I/O.

Each list contributes ``weight / (k + rank)`` to an item (weighted reciprocal rank fusion,
Cormack et al., k = 60): ranks, not raw scores, so BM25 and cosine need no common scale. The
weights were fitted on the tuning part of the benchmark data only (LoCoMo conv-26 and conv-30,
BEAM chats 1-5; see the README), by a grid search of Recall@10.

Then boosts multiply the fused score: evidence from a peer the question names, evidence from
inside a time window the question speaks of, and (for questions about the current value) newer
evidence, in proportion to how new it is among the candidates.

A slice of observations to pack into a token budget is spread over the messages it rests on
(``spread``): a long message yields many observations, and without it they crowd out the
evidence of other messages. Each further observation of a message already represented counts
for a tenth (fitted on the tuning part, for the evidence a 2,000-token get_context carries).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mnemo_context.understanding import Understanding

# Fitted (see above); Cormack et al. use 60, a flatter curve that these lists like less. The
# ranking of messages (for a top ten) likes a steeper curve than that of observations (for a
# slice to pack into a budget).
RRF_K = 5
RRF_K_OBSERVATIONS = 10


@dataclass(frozen=True)
class Weights:
    """Per-list weights of the fusion and the boosts' sizes."""

    lists: Mapping[str, float] = field(
        default_factory=lambda: {
            "lexical": 1.0,
            "dense": 1.0,
            "facts.lexical": 0.2,
            "facts.dense": 0.4,
        }
    )
    named: float = 1.0
    window: float = 2.0
    current: float = 0.3
    k: int = RRF_K
    observation_k: int = RRF_K_OBSERVATIONS
    # A message's best passage, less this times the log of its passages, per list: the best of
    # many passages of a long message matches by chance more often than a short message's one
    # (cosine for the dense list, BM25 for the lexical one).
    passages: Mapping[str, float] = field(default_factory=lambda: {"dense": 0.1, "lexical": 4.0})
    # A diverse ranking of observations multiplies each score by this for every better-ranked
    # observation that rests on one of the same messages.
    spread: float = 0.1


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True, slots=True)
class Facts:
    """What the boosts need to know of a candidate: whose it is and when it was said."""

    peer: str | None
    at: datetime | None


def fuse(
    lists: Mapping[str, Sequence[str]], weights: Weights, k: int | None = None
) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Weighted reciprocal-rank scores (``k``: the curve's, else the weights' ``k``), and which
    lists found each id."""
    k = weights.k if k is None else k
    scores: dict[str, float] = {}
    found: dict[str, list[str]] = {}
    for name, ranking in lists.items():
        weight = weights.lists.get(name, 0.0)
        if weight <= 0:
            continue
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            found.setdefault(item, []).append(name)
    return scores, found


def boost(
    scores: dict[str, float],
    facts: Mapping[str, Facts],
    understood: Understanding,
    weights: Weights,
) -> dict[str, float]:
    """``scores`` times the boosts the question earns each candidate."""
    out = dict(scores)
    if understood.named:
        for item in out:
            if facts.get(item, Facts(None, None)).peer in understood.named:
                out[item] *= 1 + weights.named
    if understood.windows:
        for item in out:
            at = facts.get(item, Facts(None, None)).at
            if any(w.holds(at) for w in understood.windows):
                out[item] *= 1 + weights.window
    if understood.current:
        dated = sorted(
            (at, item) for item in out if (at := facts.get(item, Facts(None, None)).at) is not None
        )
        for position, (_, item) in enumerate(dated):
            out[item] *= 1 + weights.current * (position + 1) / len(dated)
    return out


def ranked(scores: Mapping[str, float], order: Iterable[str] = ()) -> list[str]:
    """Ids best first; ties keep the order of ``order`` (then insertion order)."""
    first = {item: i for i, item in enumerate(dict.fromkeys([*order, *scores]))}
    return sorted(scores, key=lambda item: (-scores[item], first[item]))


def spread(
    order: Sequence[str],
    scores: Mapping[str, float],
    sources: Mapping[str, Sequence[str]],
    decay: float,
    *,
    needed: int | None = None,
    counts: Callable[[str], bool] | None = None,
) -> list[str]:
    """``order`` re-ranked greedily: each item's score times ``decay`` to the power of how many
    items already taken share one of its ``sources`` (the most shared one counts).

    ``needed``: only the head that holds that many items (of those ``counts`` accepts, if
    given) is ranked; being greedy, it is the head of the whole re-ranking."""
    taken: dict[str, int] = {}
    out: list[str] = []
    left = needed
    # Scores only fall as items are taken, so an item whose score is still current when it
    # reaches the top of the heap is the best one left (lazy greedy selection).
    heap = [(-scores[item], position, item, 0) for position, item in enumerate(order)]
    heapq.heapify(heap)
    while heap and (left is None or left > 0):
        _, position, item, seen = heapq.heappop(heap)
        now = max((taken.get(s, 0) for s in sources.get(item, ())), default=0)
        if now != seen:
            heapq.heappush(heap, (-scores[item] * decay**now, position, item, now))
            continue
        out.append(item)
        for s in sources.get(item, ()):
            taken[s] = taken.get(s, 0) + 1
        if left is not None and (counts is None or counts(item)):
            left -= 1
    return out
