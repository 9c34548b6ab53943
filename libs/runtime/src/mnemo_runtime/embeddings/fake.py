"""A deterministic, dependency-free embedder for unit tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from mnemo_runtime.embeddings.ports import Vector, Vectors, empty_vectors, l2_normalise

_WORD = re.compile(r"\w+", re.UNICODE)
# Texts with no words still need a unit vector; they all share this bucket.
_EMPTY_TOKEN = "\x00empty"


class FakeEmbedder:
    """Hashed bag of words: texts sharing words get closer vectors, with no model at all.

    Buckets come from blake2b, not hash(), so vectors are stable across processes and runs.
    """

    def __init__(self, dimension: int = 256, model_name: str = "fake-hashed-bow") -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self._dimension = dimension
        self._model_name = model_name

    @property
    def model_name(self) -> str:
        """Name recorded beside vectors, distinct from any real model's."""
        return self._model_name

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts; cheap enough to run on the event loop."""
        return self.embed_sync(texts)

    async def embed_query(self, text: str) -> Vector:
        """The text's row of ``embed``."""
        vectors = await self.embed([text])
        vector: Vector = vectors[0]
        return vector

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Embed texts on the calling thread."""
        if not texts:
            return empty_vectors(self._dimension)
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _WORD.findall(text.lower()) or [_EMPTY_TOKEN]:
                index, sign = self._bucket(token)
                out[row, index] += sign
        return l2_normalise(out)

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        # A random sign per token keeps unrelated texts near orthogonal instead of all
        # sharing a positive bias.
        return (value >> 1) % self._dimension, 1.0 if value & 1 else -1.0
