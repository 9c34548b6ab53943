"""Fitting how get_context's representation slice is ranked, on the tuning half only.

``python -m mnemo_cli.tune_retrieval locomo beam --slice`` asks the engine, for each question,
what the offline bench's get_context asks (the 100 best observations of the question's peer,
spread over their sources), keeps the head that fits 2,000 tokens as ``slice_within`` does,
and scores the share of the question's evidence messages that its observations rest on (the
slice's part of the bench's R@all; the blob's recent messages are the same under any ranking).
The spread and the curve of the observations' fusion are fitted by coordinate descent, both
benchmarks counting alike.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_bench.cases import Question
from mnemo_bench.mnemo_client import slug
from mnemo_bench.mnemo_retrieval import target_speaker
from mnemo_cli.tune_retrieval import descend, ingested_questions, weights_json
from mnemo_context.domain import Observation, slice_within
from mnemo_context.fusion import Weights
from mnemo_context.ranking import Gathered, rank_observations
from mnemo_runtime.tokens import TokenCounter
from mnemo_schema.retrieval import RetrievalQuery

BUDGET = 2_000
GRID: dict[str, tuple[float, ...]] = {
    "spread": (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0),
    "observation_k": (5.0, 10.0, 20.0, 40.0, 60.0),
}
_COUNT = TokenCounter()


@dataclass(frozen=True)
class SliceSample:
    question: Question
    gathered: Gathered
    turn_of: dict[str, str]


def slice_recall(samples: Sequence[SliceSample], w: Weights, budget: int = BUDGET) -> float:
    """Mean share of each question's evidence that the observations of its slice rest on."""
    total = 0.0
    for s in samples:
        rows = s.gathered.found.rows
        order = rank_observations(s.gathered, w, diverse=True)[0][:100]
        picked = slice_within(
            [Observation(i, rows[i].level, rows[i].content, rows[i].token_count) for i in order],
            budget,
            _COUNT.count_many,
        )
        turns = {
            s.turn_of[m] for o in picked for m in rows[o.id].source_message_ids if m in s.turn_of
        }
        evidence = set(s.question.evidence)
        total += len(evidence & turns) / len(evidence)
    return total / max(len(samples), 1)


def joint_slice(groups: Sequence[Sequence[SliceSample]], w: Weights) -> float:
    """The mean over ``groups`` (one per benchmark) of each one's slice recall."""
    return sum(slice_recall(g, w) for g in groups) / max(len(groups), 1)


async def gather_slices(benchmark: str, split: str) -> list[SliceSample]:
    """Each in-scope question's observation candidates, as the bench's get_context asks."""
    samples: list[SliceSample] = []
    async for a in ingested_questions(benchmark, split):
        who = slug(target_speaker(a.case, a.question))
        query = RetrievalQuery(
            query=a.question.text,
            observer=who,
            observed=who,
            messages=0,
            observations=100,
            diverse=True,
        )
        samples.append(
            SliceSample(a.question, await a.engine.gather(a.workspace, query), a.turn_of)
        )
    return samples


def fit_slice(benchmarks: Sequence[str], split: str, start: Weights, *, fit: bool) -> int:
    """Print the slice recall of each benchmark under ``start`` and, on the tuning split when
    ``fit``, under the weights fitted there (and those weights, as JSON)."""
    groups = {b: asyncio.run(gather_slices(b, split)) for b in benchmarks}
    for name, samples in groups.items():
        print(
            f"{name} {split}, current weights: slice recall {slice_recall(samples, start):.3f}"
            f" over {len(samples)} questions"
        )
    if split == "tuning" and fit:
        fitted, _ = descend(list(groups.values()), start, grid=GRID, score_of=joint_slice)
        for name, samples in groups.items():
            print(f"{name} {split}, fitted: slice recall {slice_recall(samples, fitted):.3f}")
        print(json.dumps(weights_json(fitted)))
    return 0
