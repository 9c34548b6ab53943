"""BEAM's event-ordering score: Kendall tau-b (with ties), normalised, times the event-set F1."""

from __future__ import annotations

import math
from collections.abc import Sequence


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of paired ranks, correcting for ties in either; 0 when undefined."""
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue  # tied in both: counts in neither denominator term
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else 0.0


def ordering_score(expected: Sequence[str], predicted: Sequence[Sequence[str]]) -> float:
    """Score a predicted order against the expected one.

    ``predicted`` gives, position by position, the expected events the answer mentioned there (a
    position holding several events ties them). Events present in both are ranked by tau-b,
    normalised to (tau + 1) / 2, and multiplied by the F1 of the event sets, so an answer that
    orders two of five events perfectly does not score like one that orders all five.
    """
    position: dict[str, int] = {}
    for rank, group in enumerate(predicted):
        for event in group:
            position.setdefault(event, rank)
    matched = [e for e in expected if e in position]
    if not matched or not expected:
        return 0.0
    precision = len(matched) / len(position)
    recall = len(matched) / len(set(expected))
    f1 = 2 * precision * recall / (precision + recall)
    if len(matched) == 1:
        return f1 * 1.0 if len(expected) == 1 else f1 * 0.5
    tau = kendall_tau_b([expected.index(e) for e in matched], [position[e] for e in matched])
    return (tau + 1) / 2 * f1
