"""Vector index over observations: the port, its Qdrant adapters (embedded, server), a fake."""

from __future__ import annotations

from pathlib import Path

from psycopg_pool import AsyncConnectionPool

from mnemo_runtime.vectors.edge import EdgeVectorIndex
from mnemo_runtime.vectors.fake import InMemoryVectorIndex
from mnemo_runtime.vectors.pgvector import PgVectorIndex
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
    "PgVectorIndex",
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


VECTOR_STORES = ("pgvector", "edge")


def build_vector_index(
    url: str | None,
    path: Path,
    *,
    pool: AsyncConnectionPool | None = None,
    store: str = "pgvector",
    api_key: str | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> VectorIndex:
    """The server adapter when a Qdrant URL is given; else ``store``: pgvector in the Postgres
    of ``pool`` (the default), or the embedded Qdrant shard under ``path``, which only the
    process that opens it can read."""
    if url:
        return QdrantServerVectorIndex.connect(url, api_key=api_key, collection=collection)
    if store == "pgvector":
        if pool is None:
            raise ValueError("the pgvector store needs a Postgres pool")
        return PgVectorIndex(pool)
    if store == "edge":
        return EdgeVectorIndex(path)
    raise ValueError(f"unknown vector store {store!r}; one of {', '.join(VECTOR_STORES)}")
