"""VectorIndex on an embedded Qdrant shard (qdrant-edge-py), the all-in-one default store.

The shard lives in-process under one directory, owned by one process: an advisory lock on the
directory turns a second opener into a clear error instead of a WAL failure deep in the engine.

Tuning, measured at 100k points of dimension 384 on 2 cores:
- every query filters on the single `scope` keyword, so the payload index hands the engine the
  scope's candidates, which it scores exactly. With 50 scopes (2k points each): ~2 ms p50, ~2.5 ms
  p95 for a scoped, level-filtered top 10, with or without graphs.
- no global HNSW graph (m=0): scoped queries never use one, and building it for 100k points took
  over 8 minutes. payload_m builds a graph per scope, only on the `scope` field (`enable_hnsw=False`
  elsewhere), and only for scopes too large to scan (FULL_SCAN_THRESHOLD_KB).
- the engine indexes nothing by itself: new points are scanned until `optimize()` runs. A scope of
  50k points scans in ~30 ms p95; after `optimize()` (about 90 s for two such scopes) ~9 ms.

The engine holds the GIL inside every call (measured: a 60 s optimize stalled all other threads),
so `asyncio.to_thread` cannot overlap its calls with other work today. Writes and maintenance
still go through it (it pays off as soon as the engine releases the GIL); searches, a millisecond
or two each, run on the loop's thread, where the hand-off would cost as much as the search.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from collections.abc import Sequence
from pathlib import Path

import qdrant_edge as qe

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

# Scopes whose vectors fit under this many KB are scanned exactly after the payload-index lookup
# (about 6,500 vectors at dimension 384); larger ones get their own graph from `optimize()`.
FULL_SCAN_THRESHOLD_KB = 10_000


def _config(dimension: int) -> qe.EdgeConfig:
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
        hnsw_config=qe.HnswIndexConfig(
            m=0, ef_construct=100, full_scan_threshold=FULL_SCAN_THRESHOLD_KB, payload_m=16
        ),
    )


def _field_indexes() -> dict[str, qe.KeywordIndexParams | qe.FloatIndexParams]:
    indexes: dict[str, qe.KeywordIndexParams | qe.FloatIndexParams] = {
        codec.SCOPE_FIELD: qe.KeywordIndexParams(is_tenant=True)
    }
    for name in codec.KEYWORD_FIELDS:
        indexes[name] = qe.KeywordIndexParams(enable_hnsw=False)
    for name in codec.FLOAT_FIELDS:
        indexes[name] = qe.FloatIndexParams(enable_hnsw=False)
    return indexes


def _filter(scope: Scope, filters: SearchFilters | None) -> qe.Filter:
    must: list[qe.ConditionType] = [
        qe.FieldCondition(codec.SCOPE_FIELD, match=qe.MatchValue(codec.scope_key(scope)))
    ]
    if filters is not None:
        if filters.levels is not None:
            levels: list[str] = sorted(filters.levels)
            must.append(qe.FieldCondition("level", match=qe.MatchAny(levels)))
        if filters.session_id is not None:
            must.append(qe.FieldCondition("session_id", match=qe.MatchValue(filters.session_id)))
        if filters.created_since is not None or filters.created_before is not None:
            window = qe.RangeFloat(gte=filters.created_since, lt=filters.created_before)
            must.append(qe.FieldCondition("created_at", range=window))
    return qe.Filter(must=must)


class EdgeVectorIndex:
    """VectorIndex on an embedded Qdrant shard stored under `directory`."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._shard: qe.EdgeShard | None = None
        self._lock_fd: int | None = None
        self._dimension = 0
        self._model = ""
        self._opening = asyncio.Lock()

    @property
    def directory(self) -> Path:
        """Where the shard and its metadata live."""
        return self._directory

    async def ensure(self, dimension: int, model_name: str) -> None:
        """Creates the shard or opens the existing one; refuses another dimension or model."""
        if dimension < 1 or not model_name:
            raise ValueError("an index needs a positive dimension and a model name")
        async with self._opening:
            if self._shard is not None:
                where = str(self._directory)
                _check_same(self._dimension, self._model, dimension, model_name, where)
                return
            await asyncio.to_thread(self._open, dimension, model_name)

    def _open(self, dimension: int, model_name: str) -> None:
        self._directory.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            meta_path = self._directory / "index.json"
            if meta_path.exists():
                meta = json.loads(meta_path.read_text())
                _check_same(meta["dimension"], meta["model"], dimension, model_name, str(meta_path))
            else:
                # Written before the shard, so a crash in between leaves a store that still opens.
                tmp = meta_path.with_suffix(".tmp")
                tmp.write_text(json.dumps({"dimension": dimension, "model": model_name}))
                os.replace(tmp, meta_path)
            shard_path = self._directory / "shard"
            if (shard_path / "edge_config.json").exists():
                shard = qe.EdgeShard.load(str(shard_path), _config(dimension))
            else:
                shard = qe.EdgeShard.create(str(shard_path), _config(dimension))
            existing = shard.info().payload_schema
            for name, params in _field_indexes().items():
                if name not in existing:
                    shard.update(qe.UpdateOperation.create_field_index(name, params))
        except BaseException:
            self._unlock()
            raise
        self._shard, self._dimension, self._model = shard, dimension, model_name

    def _lock(self) -> None:
        fd = os.open(self._directory / "owner.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise VectorIndexError(
                f"the embedded vector store at {self._directory} is already open; "
                "it is owned by one process and one index at a time"
            ) from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def _ready(self) -> qe.EdgeShard:
        if self._shard is None:
            raise IndexNotReadyError("call ensure(dimension, model_name) before using the index")
        return self._shard

    async def upsert(
        self, points: Sequence[VectorPoint], *, conn: Connection | None = None
    ) -> None:
        """Writes points; a repeated id replaces the earlier point (``conn``: not transactional)."""
        del conn  # not part of Postgres' transaction
        shard = self._ready()
        if not points:
            return
        batch = [
            qe.Point(
                codec.point_id(p.id),
                check_vector(p.vector, self._dimension).tolist(),
                codec.encode_payload(p, self._model),
            )
            for p in points
        ]
        await asyncio.to_thread(shard.update, qe.UpdateOperation.upsert_points(batch))

    async def delete(self, ids: Sequence[str], *, conn: Connection | None = None) -> None:
        """Removes points by observation id; unknown ids are ignored."""
        del conn  # not part of Postgres' transaction
        shard = self._ready()
        if not ids:
            return
        point_ids: list[qe.PointId] = [codec.point_id(i) for i in ids]
        await asyncio.to_thread(shard.update, qe.UpdateOperation.delete_points(point_ids))

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
        shard = self._ready()
        min_score = check_search(limit, max_distance)
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(check_vector(query_vector, self._dimension).tolist()),
            filter=_filter(scope, filters),
            with_payload=True,
            score_threshold=min_score,
        )
        # On the loop's thread: the engine keeps the GIL while it searches, so a worker thread
        # would block the loop just the same and add two thread hand-offs to every query.
        found = shard.query(request)
        hits: list[VectorHit] = []
        for point in found:
            observation_id, payload = codec.decode_payload(point.payload)
            hits.append(VectorHit(observation_id, point.score, payload))
        return hits

    async def count(self, scope: Scope) -> int:
        """How many points `scope` holds."""
        scope = require_scope(scope)
        shard = self._ready()
        request = qe.CountRequest(exact=True, filter=_filter(scope, None))
        return await asyncio.to_thread(shard.count, request)

    async def optimize(self) -> bool:
        """Compacts segments: drops deleted points and builds graphs for large scopes.

        It stalls the whole process (the engine keeps the GIL) for seconds to minutes, so run it
        where nothing waits on this process: at start-up, after a rebuild, in a maintenance window.
        """
        return await asyncio.to_thread(self._ready().optimize)

    async def close(self) -> None:
        """Flushes and releases the shard and its directory lock; safe to call twice."""
        shard, self._shard = self._shard, None
        if shard is not None:
            try:
                await asyncio.to_thread(shard.flush)
                await asyncio.to_thread(shard.close)
            finally:
                self._unlock()
        else:
            self._unlock()


def _check_same(
    stored_dimension: int, stored_model: str, dimension: int, model_name: str, where: str
) -> None:
    if stored_dimension != dimension:
        raise DimensionMismatchError(
            f"{where} holds vectors of dimension {stored_dimension}, not {dimension}"
        )
    if stored_model != model_name:
        raise ModelMismatchError(
            f"{where} holds vectors of model {stored_model!r}, not {model_name!r}; "
            "a new model needs a new index, rebuilt from the log"
        )
