"""Stage 7: two judges score each observation's atomicity and redundancy; Cohen's kappa per axis.

Scores in [0, 1] are binned into four ordinal classes ([0, .25), [.25, .5), [.5, .75),
[.75, 1]); the judges agree on an item when they put it in the same class. The run is rejected
only when the kappas of both axes fall below the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from mnemo_deriver.contract import ExtractedObservation
from mnemo_runtime.models import Message, ModelRequest, Stage

JUDGE_STAGE = Stage.DIALECTIC_LOW
CLASSES = (0, 1, 2, 3)
KAPPA_THRESHOLD = 0.4

SYSTEM = """You review training data for the deriver of Mnemo, a memory system for AI agents. \
The deriver turns a conversation into observations: atomic, self-contained facts about one \
person (the target). For each numbered observation give two scores from 0.0 to 1.0:
- atomicity: 1.0 when it states exactly one claim, lower the more claims it joins;
- redundancy: 1.0 when another observation in the list already states the same fact, 0.0 \
when nothing else says it."""


class ItemScore(BaseModel):
    observation: int
    atomicity: float = Field(ge=0.0, le=1.0)
    redundancy: float = Field(ge=0.0, le=1.0)


class JudgeScores(BaseModel):
    """Atomicity and redundancy per observation."""

    scores: list[ItemScore]


def judge_request(batch: str, observations: Sequence[ExtractedObservation]) -> ModelRequest:
    listed = "\n".join(f"{i}. {o.fact}" for i, o in enumerate(observations))
    return ModelRequest(
        stage=JUDGE_STAGE,
        system=SYSTEM,
        max_tokens=2048,
        temperature=0.0,
        messages=(Message.user(f"Conversation:\n{batch}\n\nObservations:\n{listed}"),),
    )


def bin_score(score: float) -> int:
    """The ordinal class of a score in [0, 1]; an edge belongs to the class above it."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a judge score lies in [0, 1], got {score}")
    return min(3, math.floor(score * 4))


def kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters' classes; 1.0 when they agree on every item (scikit-learn
    leaves that undefined when both use one class); None with no items."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    if not a:
        return None
    if list(a) == list(b):
        return 1.0
    # Imported here: scikit-learn takes seconds of CPU to import, and every ``mnemo`` command
    # (each service process, ``mnemo up``) imports this module to build its argument parser.
    from sklearn.metrics import cohen_kappa_score

    value = float(cohen_kappa_score(a, b, labels=list(CLASSES)))
    return 0.0 if math.isnan(value) else value


def accepted(k_atomicity: float | None, k_redundancy: float | None, threshold: float) -> bool:
    """At least one axis must reach the threshold; an undefined kappa does not."""
    return any(k is not None and k >= threshold for k in (k_atomicity, k_redundancy))
