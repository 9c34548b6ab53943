"""The deriver's scores (spec §4): Coverage, Deriver Quality and Molecular. Pure.

Coverage: R = |covered| / |G|; R_w = Σ w_g s(g) / Σ w_g with s = 1, ½, 0 for covered, partial,
missing and w = 3, 2, 1, 0.5 for critical, important, minor, trivial; with precision fixed at 1,
F1 = 2R / (1 + R). Deriver Quality: the share of observations with none of the seven flags that
the temporal-confusion check does not name. Molecular: mol(o) = sqrt(decon(o) · min(o)), the
geometric mean. A score over nothing (an empty gold set, no observations) is ``None``, not 0 or
1: it is left out of pooled figures, which sum counts rather than average ratios.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Importance = Literal["critical", "important", "minor", "trivial"]
Label = Literal["covered", "partial", "missing"]

WEIGHTS: dict[Importance, float] = {"critical": 3.0, "important": 2.0, "minor": 1.0, "trivial": 0.5}
CREDIT: dict[Label, float] = {"covered": 1.0, "partial": 0.5, "missing": 0.0}

FLAGS = (
    "hallucination",
    "over_inference",
    "attribution_failure",
    "misattribution",
    "misframing",
    "meta_conversational",
    "tautology",
)


def ratio(num: float, den: float) -> float | None:
    """``num / den``, or None when there is nothing to divide by."""
    return num / den if den else None


@dataclass(frozen=True)
class Coverage:
    """Counts behind Coverage; add two to pool them."""

    gold: int = 0
    covered: int = 0
    partial: int = 0
    weight: float = 0.0  # Σ w_g
    credit: float = 0.0  # Σ w_g s(g)

    @property
    def recall(self) -> float | None:
        return ratio(self.covered, self.gold)

    @property
    def weighted_recall(self) -> float | None:
        return ratio(self.credit, self.weight)

    @property
    def f1(self) -> float | None:
        r = self.recall
        return None if r is None else 2 * r / (1 + r)

    def __add__(self, other: Coverage) -> Coverage:
        return Coverage(
            self.gold + other.gold,
            self.covered + other.covered,
            self.partial + other.partial,
            self.weight + other.weight,
            self.credit + other.credit,
        )


def coverage(labels: Iterable[tuple[Importance, Label]]) -> Coverage:
    """Coverage of a gold set given each fact's importance and its label."""
    out = Coverage()
    for importance, label in labels:
        w = WEIGHTS[importance]
        out += Coverage(1, int(label == "covered"), int(label == "partial"), w, w * CREDIT[label])
    return out


@dataclass(frozen=True)
class Quality:
    """Counts behind Deriver Quality; redundancy and fixation are tallied, not scored."""

    observations: int = 0
    valid: int = 0
    flagged: int = 0  # with at least one of the seven flags
    temporal: int = 0  # named by the temporal-confusion check
    redundant: int = 0
    fixated: int = 0

    @property
    def score(self) -> float | None:
        return ratio(self.valid, self.observations)

    def __add__(self, other: Quality) -> Quality:
        return Quality(*(a + b for a, b in zip(self._tuple(), other._tuple(), strict=True)))

    def _tuple(self) -> tuple[int, ...]:
        return (
            self.observations,
            self.valid,
            self.flagged,
            self.temporal,
            self.redundant,
            self.fixated,
        )


def invalid(flags: Sequence[bool], temporal_confused: bool) -> bool:
    """valid(o) = ¬(⋁_k f_k(o) ∨ tc(o)); this is its negation."""
    return any(flags) or temporal_confused


def quality(
    flags: Sequence[Sequence[bool]],
    temporal: Iterable[int],
    redundant: Iterable[int] = (),
    fixated: Iterable[int] = (),
) -> Quality:
    """Deriver Quality of observations ``0..len(flags)-1``; set checks name observations by index.

    Indices a set check names that are not observations are ignored (and the caller counts
    them as judge faults).
    """
    n = len(flags)
    tc = {i for i in temporal if 0 <= i < n}
    bad = [invalid(f, i in tc) for i, f in enumerate(flags)]
    return Quality(
        observations=n,
        valid=bad.count(False),
        flagged=sum(1 for f in flags if any(f)),
        temporal=len(tc),
        redundant=len({i for i in redundant if 0 <= i < n}),
        fixated=len({i for i in fixated if 0 <= i < n}),
    )


def molecular(decontextuality: float, minimality: float) -> float:
    """mol(o): the geometric mean of the two judge scores, each in [0, 1]."""
    for v in (decontextuality, minimality):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"judge scores lie in [0, 1], got {v}")
    return math.sqrt(decontextuality * minimality)


@dataclass(frozen=True)
class Molecular:
    """Sum and count of mol(o), to pool."""

    observations: int = 0
    total: float = 0.0

    @property
    def mean(self) -> float | None:
        return ratio(self.total, self.observations)

    def __add__(self, other: Molecular) -> Molecular:
        return Molecular(self.observations + other.observations, self.total + other.total)


def molecular_set(pairs: Iterable[tuple[float, float]]) -> Molecular:
    """Molecular over observations given (decontextuality, minimality) each."""
    values = [molecular(d, m) for d, m in pairs]
    return Molecular(len(values), sum(values))
