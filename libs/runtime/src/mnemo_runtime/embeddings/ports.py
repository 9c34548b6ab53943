"""The embedding port: text in, unit-length float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

Vectors: TypeAlias = npt.NDArray[np.float32]
"""A (n, dimension) float32 array whose rows have unit L2 norm."""
Vector: TypeAlias = npt.NDArray[np.float32]
"""A (dimension,) float32 array of unit L2 norm."""


class EmbeddingError(RuntimeError):
    """An embedder could not produce vectors for its input."""


class Embedder(Protocol):
    """Turns texts into vectors; callers store model_name and dimension beside each vector.

    Vectors from different models (or dimensions) are not comparable, which is why both are
    exposed: a store keyed by them can refuse to mix spaces.
    """

    @property
    def model_name(self) -> str:
        """Identifier of the model whose space the vectors live in."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in order: shape (len(texts), dimension), float32, rows L2-normalised."""
        ...

    async def embed_query(self, text: str) -> Vector:
        """A search query's vector, compared against vectors from ``embed``.

        An implementation may trade a little precision for latency here, where a caller waits
        on the result: the vector must stay within a cosine of 0.97 of ``embed([text])[0]``.
        """
        ...


def empty_vectors(dimension: int) -> Vectors:
    """The (0, dimension) result for an empty input."""
    return np.zeros((0, dimension), dtype=np.float32)


def l2_normalise(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length, as float32; a zero row stays zero rather than turning NaN."""
    out: Vectors = np.array(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    # The same floor torch.nn.functional.normalize uses, so results match the reference stack.
    out /= np.maximum(norms, np.float32(1e-12))
    return out
