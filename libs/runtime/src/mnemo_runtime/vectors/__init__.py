"""Vector index over observations: the port, its Qdrant adapters (embedded, server), a fake."""

from __future__ import annotations

from pathlib import Path

from mnemo_runtime.vectors.edge import EdgeVectorIndex
from mnemo_runtime.vectors.fake import InMemoryVectorIndex
from mnemo_runtime.vectors.ports import (
    LEVELS,
    DimensionMismatchError,
    IndexNotReadyError,
    Level,
    MissingScopeError,
    ModelMismatchError,
    ObservationPayload,
    Scope,
    SearchFilters,
    VectorHit,
    VectorIndex,
    VectorIndexError,
    VectorLike,
    VectorPoint,
    require_scope,
)
from mnemo_runtime.vectors.server import DEFAULT_COLLECTION, QdrantServerVectorIndex

__all__ = [
    "DEFAULT_COLLECTION",
    "LEVELS",
    "DimensionMismatchError",
    "EdgeVectorIndex",
    "InMemoryVectorIndex",
    "IndexNotReadyError",
    "Level",
    "MissingScopeError",
    "ModelMismatchError",
    "ObservationPayload",
    "QdrantServerVectorIndex",
    "Scope",
    "SearchFilters",
    "VectorHit",
    "VectorIndex",
    "VectorIndexError",
    "VectorLike",
    "VectorPoint",
    "build_vector_index",
    "require_scope",
]


def build_vector_index(
    url: str | None,
    path: Path,
    *,
    api_key: str | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> VectorIndex:
    """The server adapter when a Qdrant URL is given, else the embedded store under `path`."""
    if url:
        return QdrantServerVectorIndex.connect(url, api_key=api_key, collection=collection)
    return EdgeVectorIndex(path)
