"""VectorIndex on a Qdrant server collection through qdrant-client, for the distributed mode.

Same layout and semantics as the embedded adapter (see `codec`). The collection follows Qdrant's
multitenancy pattern: every query carries the `scope` key, so there is no global HNSW graph (m=0)
and a graph is built per scope (payload_m) on the tenant-indexed `scope` field only.
"""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

from mnemo_runtime.pg import Connection
from mnemo_runtime.vectors import codec
from mnemo_runtime.vectors.ports import (
    DimensionMismatchError,
    IndexNotReadyError,
    ModelMismatchError,
    Scope,
    SearchFilters,
    VectorHit,
    VectorIndexError,
    VectorLike,
    VectorPoint,
    check_search,
    check_vector,
    require_scope,
)

DEFAULT_COLLECTION = "observations"
_MODEL_KEY = "embedding_model"


def _field_indexes() -> dict[str, qm.KeywordIndexParams | qm.FloatIndexParams]:
    keyword = qm.KeywordIndexType.KEYWORD
    indexes: dict[str, qm.KeywordIndexParams | qm.FloatIndexParams] = {
        codec.SCOPE_FIELD: qm.KeywordIndexParams(type=keyword, is_tenant=True)
    }
    for name in codec.KEYWORD_FIELDS:
        indexes[name] = qm.KeywordIndexParams(type=keyword, enable_hnsw=False)
    for name in codec.FLOAT_FIELDS:
        indexes[name] = qm.FloatIndexParams(type=qm.FloatIndexType.FLOAT, enable_hnsw=False)
    return indexes


def _filter(scope: Scope, filters: SearchFilters | None) -> qm.Filter:
    must: list[qm.Condition] = [
        qm.FieldCondition(key=codec.SCOPE_FIELD, match=qm.MatchValue(value=codec.scope_key(scope)))
    ]
    if filters is not None:
        if filters.levels is not None:
            levels: list[str] = sorted(filters.levels)
            must.append(qm.FieldCondition(key="level", match=qm.MatchAny(any=levels)))
        if filters.session_id is not None:
            session = qm.MatchValue(value=filters.session_id)
            must.append(qm.FieldCondition(key="session_id", match=session))
        if filters.created_since is not None or filters.created_before is not None:
            window = qm.Range(gte=filters.created_since, lt=filters.created_before)
            must.append(qm.FieldCondition(key="created_at", range=window))
    return qm.Filter(must=must)


class QdrantServerVectorIndex:
    """VectorIndex on one collection of a Qdrant server; closing it closes the client it owns."""

    def __init__(self, client: AsyncQdrantClient, collection: str = DEFAULT_COLLECTION) -> None:
        self._client = client
        self._collection = collection
        self._dimension = 0
        self._model = ""

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        timeout: int | None = None,
    ) -> QdrantServerVectorIndex:
        """An index on the server at `url` (QDRANT_URL)."""
        return cls(AsyncQdrantClient(url=url, api_key=api_key, timeout=timeout), collection)

    async def ensure(self, dimension: int, model_name: str) -> None:
        """Creates the collection and its payload indexes, or checks the existing one."""
        if dimension < 1 or not model_name:
            raise ValueError("an index needs a positive dimension and a model name")
        if not await self._client.collection_exists(self._collection):
            try:
                await self._client.create_collection(
                    self._collection,
                    vectors_config=qm.VectorParams(size=dimension, distance=qm.Distance.COSINE),
                    hnsw_config=qm.HnswConfigDiff(m=0, payload_m=16),
                    metadata={_MODEL_KEY: model_name, "dimension": dimension},
                )
            except Exception:
                # Another process may have created it first; only then is the error harmless.
                if not await self._client.collection_exists(self._collection):
                    raise
        info = await self._client.get_collection(self._collection)
        params = info.config.params.vectors
        if not isinstance(params, qm.VectorParams) or params.distance != qm.Distance.COSINE:
            raise VectorIndexError(
                f"collection {self._collection!r} is not a cosine single-vector collection"
            )
        if params.size != dimension:
            raise DimensionMismatchError(
                f"collection {self._collection!r} holds vectors of dimension {params.size}, "
                f"not {dimension}"
            )
        stored_model = (info.config.metadata or {}).get(_MODEL_KEY)
        if stored_model is not None and stored_model != model_name:
            raise ModelMismatchError(
                f"collection {self._collection!r} holds vectors of model {stored_model!r}, "
                f"not {model_name!r}; a new model needs a new collection, rebuilt from the log"
            )
        for name, schema in _field_indexes().items():
            if name not in info.payload_schema:
                await self._client.create_payload_index(self._collection, name, schema, wait=True)
        self._dimension, self._model = dimension, model_name

    def _ready(self) -> None:
        if not self._dimension:
            raise IndexNotReadyError("call ensure(dimension, model_name) before using the index")

    async def upsert(
        self, points: Sequence[VectorPoint], *, conn: Connection | None = None
    ) -> None:
        """Writes points and waits until they are searchable; a repeated id replaces the point.

        ``conn`` is ignored: the server is not part of Postgres' transaction.
        """
        del conn  # not part of Postgres' transaction
        self._ready()
        if not points:
            return
        batch = [
            qm.PointStruct(
                id=str(codec.point_id(p.id)),
                vector=check_vector(p.vector, self._dimension).tolist(),
                payload=codec.encode_payload(p, self._model),
            )
            for p in points
        ]
        await self._client.upsert(self._collection, batch, wait=True)

    async def delete(self, ids: Sequence[str], *, conn: Connection | None = None) -> None:
        """Removes points by observation id; unknown ids are ignored."""
        del conn  # not part of Postgres' transaction
        self._ready()
        if not ids:
            return
        selector = qm.PointIdsList(points=[str(codec.point_id(i)) for i in ids])
        await self._client.delete(self._collection, selector, wait=True)

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
        response = await self._client.query_points(
            self._collection,
            query=check_vector(query_vector, self._dimension).tolist(),
            query_filter=_filter(scope, filters),
            limit=limit,
            with_payload=True,
            score_threshold=min_score,
        )
        hits: list[VectorHit] = []
        for point in response.points:
            observation_id, payload = codec.decode_payload(point.payload)
            hits.append(VectorHit(observation_id, point.score, payload))
        return hits

    async def count(self, scope: Scope) -> int:
        """How many points `scope` holds."""
        scope = require_scope(scope)
        self._ready()
        result = await self._client.count(self._collection, _filter(scope, None), exact=True)
        return result.count

    async def optimize(self) -> bool:
        """The server optimises segments in the background by itself."""
        return False

    async def close(self) -> None:
        """Closes the client."""
        self._dimension = 0
        await self._client.close()
