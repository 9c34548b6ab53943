"""Vector index over observations: the port, its Qdrant adapters (embedded, server), a fake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemo_runtime.pg import Pool
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
# The Qdrant server adapter brings qdrant-client, seconds of CPU to import at every start of
# every process: it is loaded when a Qdrant URL is given, or when asked for by name.
_SERVER = ("DEFAULT_COLLECTION", "QdrantServerVectorIndex")


def __getattr__(name: str) -> Any:
    if name in _SERVER:
        from mnemo_runtime.vectors import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_vector_index(
    url: str | None,
    path: Path,
    *,
    pool: Pool | None = None,
    store: str = "pgvector",
    api_key: str | None = None,
    collection: str | None = None,
) -> VectorIndex:
    """The server adapter when a Qdrant URL is given; else ``store``: pgvector in the Postgres
    of ``pool`` (the default), or the embedded Qdrant shard under ``path``, which only the
    process that opens it can read."""
    if url:
        from mnemo_runtime.vectors.server import DEFAULT_COLLECTION, QdrantServerVectorIndex

        return QdrantServerVectorIndex.connect(
            url, api_key=api_key, collection=collection or DEFAULT_COLLECTION
        )
    if store == "pgvector":
        if pool is None:
            raise ValueError("the pgvector store needs a Postgres pool")
        return PgVectorIndex(pool)
    if store == "edge":
        return EdgeVectorIndex(path)
    raise ValueError(f"unknown vector store {store!r}; one of {', '.join(VECTOR_STORES)}")
