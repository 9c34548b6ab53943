"""An in-memory VectorIndex: exact cosine search with numpy, for unit tests of code that needs one.

It runs the same contract suite as the Qdrant adapters, so what passes against it holds for them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mnemo_runtime.pg import Connection
from mnemo_runtime.vectors.ports import (
    DimensionMismatchError,
    IndexNotReadyError,
    ModelMismatchError,
    ObservationPayload,
    Scope,
    SearchFilters,
    Vector,
    VectorHit,
    VectorLike,
    VectorPoint,
    check_search,
    check_vector,
    require_scope,
)


def _unit(vector: Vector) -> Vector:
    unit: Vector = vector / np.linalg.norm(vector)
    return unit


class InMemoryVectorIndex:
    """A brute-force VectorIndex holding unit vectors in a dict; nothing survives `close`."""

    def __init__(self) -> None:
        self._dimension = 0
        self._model = ""
        self._points: dict[str, tuple[Vector, ObservationPayload]] = {}
        self._open = False

    async def ensure(self, dimension: int, model_name: str) -> None:
        """Fixes the dimension and model on first use; refuses others later."""
        if dimension < 1 or not model_name:
            raise ValueError("an index needs a positive dimension and a model name")
        if self._dimension and self._dimension != dimension:
            raise DimensionMismatchError(
                f"the index holds vectors of dimension {self._dimension}, not {dimension}"
            )
        if self._model and self._model != model_name:
            raise ModelMismatchError(
                f"the index holds vectors of model {self._model!r}, not {model_name!r}"
            )
        self._dimension, self._model, self._open = dimension, model_name, True

    def _ready(self) -> None:
        if not self._open:
            raise IndexNotReadyError("call ensure(dimension, model_name) before using the index")

    async def upsert(
        self, points: Sequence[VectorPoint], *, conn: Connection | None = None
    ) -> None:
        """Writes points; a repeated id replaces the earlier point (``conn``: not transactional)."""
        del conn  # not part of Postgres' transaction
        self._ready()
        staged = [(p.id, _unit(check_vector(p.vector, self._dimension)), p.payload) for p in points]
        for point_id, vector, payload in staged:
            self._points[point_id] = (vector, payload)

    async def delete(self, ids: Sequence[str], *, conn: Connection | None = None) -> None:
        """Removes points by observation id; unknown ids are ignored."""
        del conn  # not part of Postgres' transaction
        self._ready()
        for point_id in ids:
            self._points.pop(point_id, None)

    async def search(
        self,
        query_vector: VectorLike,
        scope: Scope,
        *,
        limit: int = 10,
        filters: SearchFilters | None = None,
        max_distance: float | None = None,
    ) -> list[VectorHit]:
        """The `limit` nearest points in `scope`, best first, none beyond `max_distance`."""
        scope = require_scope(scope)
        self._ready()
        min_score = check_search(limit, max_distance)
        query = _unit(check_vector(query_vector, self._dimension))
        candidates = [
            (point_id, vector, payload)
            for point_id, (vector, payload) in self._points.items()
            if payload.scope == scope and (filters is None or filters.matches(payload))
        ]
        if not candidates:
            return []
        scores = np.stack([vector for _, vector, _ in candidates]) @ query
        hits = [
            VectorHit(point_id, float(score), payload)
            for (point_id, _, payload), score in zip(candidates, scores, strict=True)
            if min_score is None or score >= min_score
        ]
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:limit]

    async def count(self, scope: Scope) -> int:
        """How many points `scope` holds."""
        scope = require_scope(scope)
        self._ready()
        return sum(1 for _, payload in self._points.values() if payload.scope == scope)

    async def optimize(self) -> bool:
        """Nothing to build: every search is exact."""
        return False

    async def close(self) -> None:
        """Forgets every point, and the dimension and model with them."""
        self._points.clear()
        self._dimension, self._model, self._open = 0, "", False
