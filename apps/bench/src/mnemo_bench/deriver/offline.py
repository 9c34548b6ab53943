"""The offline measure: Coverage against LoCoMo's reference facts, grounding, density.

No model is asked anything: the matcher decides whether an observation states a reference fact.
All reference facts weigh the same (LoCoMo does not grade them), so R_w differs from R only by
the half credit of partially covered facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mnemo_bench.deriver.matcher import Matcher
from mnemo_bench.deriver.references import Reference, RefKey
from mnemo_bench.deriver.scores import Coverage, Importance, Label, coverage, ratio
from mnemo_bench.deriver.traces import Trace


@dataclass
class OfflineCounts:
    """What one conversation (or several, added up) scored offline."""

    coverage: Coverage = field(default_factory=Coverage)
    proposed: int = 0
    grounded: int = 0
    kept: int = 0
    messages: int = 0
    malformed_batches: int = 0

    def add(self, other: OfflineCounts) -> None:
        self.coverage += other.coverage
        self.proposed += other.proposed
        self.grounded += other.grounded
        self.kept += other.kept
        self.messages += other.messages
        self.malformed_batches += other.malformed_batches

    def row(self) -> dict[str, float | int | None]:
        c = self.coverage
        return {
            "gold": c.gold,
            "covered": c.covered,
            "partial": c.partial,
            "R": c.recall,
            "R_w": c.weighted_recall,
            "F1": c.f1,
            "proposed": self.proposed,
            "grounding_precision": ratio(self.grounded, self.proposed),
            "kept": self.kept,
            "messages": self.messages,
            "observations_per_message": ratio(self.kept, self.messages),
            "malformed_batches": self.malformed_batches,
        }


async def score_trace(
    trace: Trace, references: Sequence[Reference], matcher: Matcher
) -> OfflineCounts:
    """A trace's offline counts; Coverage against the references of its session and speaker."""
    kept = [p.fact for p in trace.kept()]
    best = await matcher.best([r.fact for r in references], kept, trace.target)
    labels: list[tuple[Importance, Label]] = [
        ("minor", matcher.thresholds.label(b.score)) for b in best
    ]
    return OfflineCounts(
        coverage=coverage(labels),
        proposed=len(trace.proposed),
        grounded=sum(p.grounded for p in trace.proposed),
        kept=len(kept),
        messages=trace.target_messages(),
        malformed_batches=trace.malformed_batches,
    )


async def score_offline(
    traces: Sequence[Trace], references: Mapping[RefKey, list[Reference]], matcher: Matcher
) -> dict[str, OfflineCounts]:
    """Counts per conversation, in the order first seen."""
    out: dict[str, OfflineCounts] = {}
    for t in traces:
        counts = await score_trace(
            t, references.get((t.case_id, t.session_id, t.target), []), matcher
        )
        out.setdefault(t.case_id, OfflineCounts()).add(counts)
    return out
