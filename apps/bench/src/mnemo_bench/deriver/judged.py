"""The judged run over traces: Coverage, Deriver Quality and Molecular per unit, resumable.

A unit is one speaker in one session (one trace). A judge's answer that fails its schema after
the corrective attempts is counted as a fault of that unit and its scores are left out; an
answer that passes the schema but skips, repeats or invents numbers is used for what it says
and the rest is counted as faults, never guessed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from mnemo_bench.deriver.judges import (
    CoverageLabels,
    GoldFacts,
    MolecularScores,
    QualityVerdict,
    coverage_request,
    gold_request,
    molecular_request,
    quality_request,
)
from mnemo_bench.deriver.scores import (
    FLAGS,
    Coverage,
    Importance,
    Label,
    Molecular,
    Quality,
    coverage,
    molecular,
    quality,
)
from mnemo_bench.deriver.traces import Trace
from mnemo_runtime.models import ChatModel, MalformedOutput, structured

T = TypeVar("T")


@dataclass
class Judged:
    """One unit's judged counts, faults and its worst observations."""

    coverage: Coverage = field(default_factory=Coverage)
    quality: Quality = field(default_factory=Quality)
    molecular: Molecular = field(default_factory=Molecular)
    faults: Counter[str] = field(default_factory=Counter)
    worst: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: Judged) -> None:
        self.coverage += other.coverage
        self.quality += other.quality
        self.molecular += other.molecular
        self.faults.update(other.faults)
        self.worst.extend(other.worst)

    def to_row(self) -> dict[str, Any]:
        return {
            "coverage": asdict(self.coverage),
            "quality": asdict(self.quality),
            "molecular": asdict(self.molecular),
            "faults": {k: v for k, v in self.faults.items() if v},
            "worst": self.worst,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Judged:
        return cls(
            Coverage(**row["coverage"]),
            Quality(**row["quality"]),
            Molecular(**row["molecular"]),
            Counter(row["faults"]),
            list(row["worst"]),
        )


def _by_number(items: list[Any], n: int, fault: str, faults: Counter[str]) -> dict[int, Any]:
    """Answers keyed by the number they refer to; out of range or repeated ones are faults."""
    out: dict[int, Any] = {}
    for item in items:
        k = item.gold if hasattr(item, "gold") else item.observation
        if not 0 <= k < n or k in out:
            faults[f"{fault}_bad_number"] += 1
            continue
        out[k] = item
    faults[f"{fault}_unanswered"] += n - len(out)
    return out


async def _coverage(judge: ChatModel, trace: Trace, kept: list[str], out: Judged) -> None:
    gold = (await structured(judge, gold_request(trace), GoldFacts)).facts
    if not gold:
        return
    answer = await structured(judge, coverage_request([g.fact for g in gold], kept), CoverageLabels)
    labels = _by_number(answer.labels, len(gold), "coverage", out.faults)
    # A gold fact the judge did not label is counted missing (and as a fault above).
    pairs: list[tuple[Importance, Label]] = [
        (g.importance, labels[i].label if i in labels else "missing") for i, g in enumerate(gold)
    ]
    out.coverage = coverage(pairs)


async def _quality(
    judge: ChatModel, trace: Trace, kept: list[str], out: Judged
) -> dict[int, list[str]]:
    verdict = await structured(judge, quality_request(trace, kept), QualityVerdict)
    flags = _by_number(verdict.observations, len(kept), "quality", out.faults)
    judged = sorted(flags)
    position = {o: i for i, o in enumerate(judged)}

    def among(ids: list[int]) -> list[int]:
        # A set check naming an observation that is not there (or was not judged) is a fault.
        out.faults["quality_bad_number"] += sum(1 for i in ids if i not in position)
        return [position[i] for i in ids if i in position]

    groups = [among(group) for group in verdict.redundancy]
    out.quality = quality(
        [[getattr(flags[o], f) for f in FLAGS] for o in judged],
        among(verdict.temporal_confusion),
        [i for group in groups if len(group) > 1 for i in group],
        among(verdict.topical_fixation),
    )
    temporal = set(verdict.temporal_confusion)
    return {
        o: [f for f in FLAGS if getattr(flags[o], f)]
        + (["temporal_confusion"] if o in temporal else [])
        for o in judged
    }


async def _molecular(judge: ChatModel, kept: list[str], out: Judged) -> dict[int, float]:
    answer = await structured(judge, molecular_request(kept), MolecularScores)
    forms = _by_number(answer.observations, len(kept), "molecular", out.faults)
    mol = {o: molecular(f.decontextuality, f.minimality) for o, f in forms.items()}
    out.molecular = Molecular(len(mol), sum(mol.values()))
    return mol


async def _guarded(name: str, step: Awaitable[T], out: Judged) -> T | None:
    try:
        return await step
    except MalformedOutput:
        out.faults[f"{name}_malformed"] += 1
        return None


async def judge_trace(judge: ChatModel, trace: Trace) -> Judged:
    """Every judge over one trace; quality and form are not asked about no observations."""
    out = Judged()
    kept = [p.fact for p in trace.kept()]
    await _guarded("coverage", _coverage(judge, trace, kept, out), out)
    reasons: dict[int, list[str]] = {}
    mol: dict[int, float] = {}
    if kept:
        reasons = await _guarded("quality", _quality(judge, trace, kept, out), out) or {}
        mol = await _guarded("molecular", _molecular(judge, kept, out), out) or {}
    for i, fact in enumerate(kept):
        flagged = reasons.get(i, [])
        if flagged or mol.get(i, 1.0) < 0.5:
            out.worst.append(
                {"unit": trace.key, "observation": fact, "flags": flagged, "mol": mol.get(i)}
            )
    return out
