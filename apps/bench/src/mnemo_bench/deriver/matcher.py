"""Does an observation state a reference fact? Embedding similarity plus lexical overlap.

score(r, o) = α · cos(e(r), e(o)) + (1 − α) · overlap(r, o), where overlap is the share of the
reference's content words (the speaker's own name and stop words aside, crudely stemmed) that
the observation contains. A reference is covered by its best-scoring observation when that
score reaches ``covered``, partially covered from ``partial``. The constants are calibrated on
a hand-labelled sample of the tuning conversations (see ``calibrate``; the sample is a test
fixture), never on the conversations the figures are reported on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mnemo_bench.bm25 import STOPWORDS
from mnemo_bench.deriver.scores import Label
from mnemo_runtime.embeddings import Embedder

_WORD = re.compile(r"[a-z0-9]+")
# BM25's stop words, and words that say when rather than what.
_STOP = STOPWORDS | {"recently", "currently", "now", "just", "really", "also", "ago"}


def _stem(word: str) -> str:
    # Crude, but the same on both sides: "lakes" / "lake", "named" / "name", "dancing" / "dance".
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def content_words(text: str, drop: frozenset[str] = frozenset()) -> frozenset[str]:
    """Lower-cased, stemmed words of ``text`` without stop words or the words in ``drop``."""
    words = (w.removesuffix("'s") for w in _WORD.findall(text.casefold().replace("'", "")))
    return frozenset(_stem(w) for w in words if w not in _STOP and w not in drop)


def overlap(reference: str, observation: str, speaker: str) -> float:
    """Share of the reference's content words found in the observation."""
    drop = frozenset(_WORD.findall(speaker.casefold()))
    ref = content_words(reference, drop)
    return len(ref & content_words(observation, drop)) / len(ref) if ref else 0.0


@dataclass(frozen=True)
class Thresholds:
    """The matcher's constants."""

    alpha: float
    covered: float
    partial: float

    def label(self, score: float) -> Label:
        if score >= self.covered:
            return "covered"
        return "partial" if score >= self.partial else "missing"


# ``calibrate`` on the tuning half of the hand-labelled sample (conv-26, conv-30; the fixture
# apps/bench/tests/fixtures/deriver_matcher_labels.jsonl), α from 0, 0.25, 0.5, 0.75, 1.
CALIBRATED = Thresholds(alpha=0.5, covered=0.585, partial=0.45)


@dataclass(frozen=True)
class Best:
    """A reference's best-matching observation (index, or None when there are none) and score."""

    index: int | None
    score: float


class Matcher:
    """Scores references against observations with an embedder; pure apart from embedding."""

    def __init__(self, embedder: Embedder, thresholds: Thresholds = CALIBRATED) -> None:
        self._embedder = embedder
        self.thresholds = thresholds

    async def scores(
        self, references: Sequence[str], observations: Sequence[str], speaker: str
    ) -> np.ndarray:
        """(references × observations) matrix of scores."""
        if not references or not observations:
            return np.zeros((len(references), len(observations)), dtype=np.float32)
        vectors = await self._embedder.embed([*references, *observations])
        cos = vectors[: len(references)] @ vectors[len(references) :].T
        lex = np.array(
            [[overlap(r, o, speaker) for o in observations] for r in references], dtype=np.float32
        )
        a = self.thresholds.alpha
        return np.asarray(a * cos + (1 - a) * lex, dtype=np.float32)

    async def best(
        self, references: Sequence[str], observations: Sequence[str], speaker: str
    ) -> list[Best]:
        """Each reference's best observation."""
        if not observations:
            return [Best(None, 0.0) for _ in references]
        m = await self.scores(references, observations, speaker)
        return [Best(int(row.argmax()), float(row.max())) for row in m]


@dataclass(frozen=True)
class LabelledPair:
    """A hand-labelled (reference, observation) pair: does the observation state the fact?"""

    reference: str
    observation: str
    speaker: str
    label: Label


def precision_recall(
    predicted: Sequence[bool], actual: Sequence[bool]
) -> tuple[float | None, float | None]:
    """Precision and recall of ``predicted`` against ``actual``; None where undefined."""
    tp = sum(p and a for p, a in zip(predicted, actual, strict=True))
    fp = sum(p and not a for p, a in zip(predicted, actual, strict=True))
    fn = sum(a and not p for p, a in zip(predicted, actual, strict=True))
    return (tp / (tp + fp) if tp + fp else None, tp / (tp + fn) if tp + fn else None)


def _best_threshold(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """The cut maximising F1 of ``score >= cut`` against ``positive`` (ties: the higher cut)."""
    best, best_f1 = 1.0, -1.0
    for cut in sorted(set(scores)):
        p, r = precision_recall([s >= cut for s in scores], positive)
        f1 = 2 * p * r / (p + r) if p and r else 0.0
        if f1 >= best_f1:
            best, best_f1 = cut, f1
    return best


def pair_scores(pairs: Sequence[LabelledPair], cos: Sequence[float], alpha: float) -> list[float]:
    """The matcher's score of each pair, given the pairs' cosine similarities."""
    return [
        alpha * c + (1 - alpha) * overlap(p.reference, p.observation, p.speaker)
        for p, c in zip(pairs, cos, strict=True)
    ]


def calibrate(
    pairs: Sequence[LabelledPair], cos: Sequence[float], alphas: Sequence[float]
) -> Thresholds:
    """Thresholds fitted to labelled pairs: α and both cuts, each cut maximising its F1.

    α is chosen for the F1 of the ``covered`` decision, the one Coverage's R rests on.
    """
    fitted: list[tuple[float, Thresholds]] = []
    covered = [p.label == "covered" for p in pairs]
    some = [p.label != "missing" for p in pairs]
    for alpha in alphas:
        s = pair_scores(pairs, cos, alpha)
        cut = _best_threshold(s, covered)
        p, r = precision_recall([x >= cut for x in s], covered)
        f1 = 2 * p * r / (p + r) if p and r else 0.0
        part = min(cut, _best_threshold(s, some))
        # Rounded down, so that the pair the cut was taken from stays on its side.
        fitted.append((f1, Thresholds(alpha, _floor(cut), _floor(part))))
    return max(fitted, key=lambda t: t[0])[1]


def _floor(x: float) -> float:
    return math.floor(x * 1000) / 1000
