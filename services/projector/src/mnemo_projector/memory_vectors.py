"""The memory projection's vectors: each distinct recent text embedded once, and when the index
is due to build its search structures."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from mnemo_runtime.embeddings import Embedder, Vectors
from mnemo_runtime.metrics import EMBED_RECALLED


class IndexUpkeep:
    """When to have the index build its search structures: after enough new points, once the
    writes pause (building them can stall the process that holds an embedded index)."""

    def __init__(self, after_points: int = 20_000, quiet_s: float = 30.0) -> None:
        self.after_points = after_points
        self.quiet_s = quiet_s
        self.pending = 0
        self._last_write = 0.0

    def written(self, points: int, now: float) -> None:
        """``points`` were written to the index at ``now`` (monotonic seconds)."""
        if points:
            self.pending += points
            self._last_write = now

    def due(self, now: float) -> bool:
        """Whether to optimise now."""
        return self.pending >= self.after_points and now - self._last_write >= self.quiet_s

    def done(self) -> None:
        """The index was optimised."""
        self.pending = 0


# Distinct texts whose vectors are kept (about 1.5 KB each at dimension 384).
RECENT_VECTORS = 4096


class RecentVectors:
    """Embeds each distinct text once among those seen lately. The deriver writes one sentence
    into every representation that heard it (the speaker's own, and each listener's view of the
    speaker): in a two-party chat about a third of the observations repeat another's text,
    whose vector is the same."""

    def __init__(self, embedder: Embedder, size: int = RECENT_VECTORS) -> None:
        self._embedder = embedder
        self._size = size
        self._kept: OrderedDict[str, Vectors] = OrderedDict()

    async def embed(self, texts: Sequence[str]) -> list[Vectors]:
        """A vector for each of ``texts``, in order."""
        found: dict[str, Vectors] = {}
        for text in texts:
            vector = self._kept.get(text)
            if vector is not None:
                self._kept.move_to_end(text)
                found[text] = vector
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        recalled = len(texts) - len(todo)
        if recalled:
            EMBED_RECALLED.inc(recalled)
        if todo:
            for text, vector in zip(todo, await self._embedder.embed(todo), strict=True):
                found[text] = vector
                # A copy: a row of the batch's array would keep the whole array alive.
                self._kept[text] = np.array(vector, dtype=np.float32)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return [found[t] for t in texts]
