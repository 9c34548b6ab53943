"""What is specific to the adapters: point layout, the embedded store's ownership, composition."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from mnemo_runtime.pg_partitions import layout, partitions_ddl
from mnemo_runtime.vectors import (
    EdgeVectorIndex,
    InMemoryVectorIndex,
    ObservationPayload,
    PgVectorIndex,
    QdrantServerVectorIndex,
    Scope,
    VectorIndexError,
    VectorPoint,
    build_vector_index,
)
from mnemo_runtime.vectors.bench import bench_filtered_search
from mnemo_runtime.vectors.codec import point_id, scope_key

# Building the server adapter probes for a server, and there is none here.
pytestmark = pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning")

SCOPE = Scope("w1", "alice", "bob")


def _point(observation_id: str, *components: float) -> VectorPoint:
    vector = np.zeros(4, dtype=np.float32)
    vector[: len(components)] = components
    payload = ObservationPayload("w1", "alice", "bob", "explicit", created_at=1.0)
    return VectorPoint(observation_id, vector, payload)


def test_point_ids_are_stable_uuids_of_observation_ids() -> None:
    # A golden value: a changed derivation would orphan every point already stored.
    assert point_id("obs-1") == point_id("obs-1")
    assert point_id("obs-1") != point_id("obs-2")
    assert point_id("obs-1") == uuid.UUID("c679407f-e01f-5392-8d31-42ea81f9e85e")


def test_scope_keys_cannot_collide_across_fields() -> None:
    assert scope_key(Scope("w", "a,b", "c")) != scope_key(Scope("w", "a", "b,c"))
    assert scope_key(Scope("w", 'a"', "b")) != scope_key(Scope("w", "a", '"b'))


async def test_the_embedded_store_has_one_owner_at_a_time(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path)
    await first.ensure(4, "m")
    second = EdgeVectorIndex(tmp_path)
    with pytest.raises(VectorIndexError, match="already open"):
        await second.ensure(4, "m")
    await first.close()
    await first.close()  # closing twice is harmless

    await second.ensure(4, "m")
    assert await second.count(SCOPE) == 0
    await second.close()


async def test_build_vector_index_picks_the_server_only_with_a_url(tmp_path: Path) -> None:
    embedded = build_vector_index(None, tmp_path, store="edge")
    assert isinstance(embedded, EdgeVectorIndex)
    await embedded.close()
    server = build_vector_index("http://localhost:6333", tmp_path, collection="obs")
    assert isinstance(server, QdrantServerVectorIndex)
    await server.close()
    # pgvector, the default, lives in the process's Postgres: without a pool there is none.
    with pytest.raises(ValueError, match="pool"):
        build_vector_index(None, tmp_path)
    with pytest.raises(ValueError, match="unknown vector store"):
        build_vector_index(None, tmp_path, store="faiss")


async def test_bench_reports_latency_figures() -> None:
    result = await bench_filtered_search(InMemoryVectorIndex(), n=600, dim=16, queries=5)
    assert result["n"] == 600
    assert result["p95_ms"] >= result["p50_ms"] >= 0.0
    assert result["load_s"] >= 0.0


@pytest.mark.integration
async def test_pgvector_points_commit_and_roll_back_with_the_callers_transaction(pg_pool) -> None:
    index = PgVectorIndex(pg_pool, f"tx_{uuid.uuid4().hex[:12]}")
    await index.ensure(4, "m")

    class RolledBack(Exception):
        pass

    with pytest.raises(RolledBack):
        async with pg_pool.connection() as conn, conn.transaction():
            await index.upsert([_point("lost", 1.0)], conn=conn)
            raise RolledBack
    assert await index.count(SCOPE) == 0

    async with pg_pool.connection() as conn, conn.transaction():
        await index.upsert([_point("kept", 1.0), _point("gone", 0.0, 1.0)], conn=conn)
        await index.delete(["gone"], conn=conn)
    assert [h.id for h in await index.search(np.array([1.0, 0, 0, 0]), SCOPE)] == ["kept"]


async def _made_before(
    pg_pool, ddl: str, table: str, points: list[tuple[str, str, str, str]]
) -> PgVectorIndex:
    """A vector table made by an earlier layout (``ddl``) holding ``points`` (id, workspace,
    observer, vector), then opened as now, twice (the second start finds nothing to move)."""
    async with pg_pool.connection() as conn:
        await conn.execute(ddl)
        await conn.execute(
            "INSERT INTO vector_indexes (name, dimension, model) VALUES (%s, 4, 'm')", (table,)
        )
        for oid, ws, observer, vector in points:
            await conn.execute(
                f"INSERT INTO {table} VALUES (%s, %s, %s, 'bob', 'explicit', NULL, 1.0, %s)",
                (oid, ws, observer, vector),
            )
    index = PgVectorIndex(pg_pool, table)
    await index.ensure(4, "m")
    await index.ensure(4, "m")
    return index


async def _layout(pg_pool, table: str) -> tuple[str | None, int]:
    """The table's partition key (``pg_partitions.layout``) and how many partitions it has."""
    async with pg_pool.connection() as conn:
        key = await layout(conn, table)
        cur = await conn.execute(
            "SELECT count(*) AS n FROM pg_inherits WHERE inhparent = %s::regclass", (table,)
        )
        row = await cur.fetchone()
    assert row is not None
    return key, int(row["n"])


# The table as it was made before the vectors were split by workspace.
UNSPLIT = """
CREATE TABLE {t} (id text PRIMARY KEY, workspace text NOT NULL, observer text NOT NULL,
    observed text NOT NULL, level text NOT NULL, session_id text,
    created_at double precision NOT NULL, embedding vector(4) NOT NULL);
CREATE INDEX {t}_by_scope ON {t} (workspace, observer, observed);
CREATE INDEX {t}_hnsw ON {t} USING hnsw (embedding vector_ip_ops) WITH (m = 16, ef_construction = 64);
"""


@pytest.mark.integration
async def test_pgvector_moves_a_table_made_before_the_split_into_partitions(pg_pool) -> None:
    table = f"unsplit_{uuid.uuid4().hex[:12]}"
    points = [(f"o{i}", f"w{i % 5}", "alice", f"[{1 + i % 3}, {i % 2}, 0.5, 0]") for i in range(40)]
    index = await _made_before(pg_pool, UNSPLIT.format(t=table), table, points)
    assert await _layout(pg_pool, table) == ("HASH (workspace, observer, observed)", 16)
    async with pg_pool.connection() as conn:
        cur = await conn.execute(f"SELECT count(*) AS n FROM {table}")
        assert await cur.fetchone() == {"n": 40}
    found = await index.search(np.array([1.0, 0, 0, 0]), Scope("w3", "alice", "bob"), limit=20)
    assert sorted(h.id for h in found) == sorted(f"o{i}" for i in range(40) if i % 5 == 3)
    # Written and deleted as before, in the partition of its representation.
    await index.upsert([_point("o3", 0.0, 1.0)])
    await index.delete(["o8"])
    assert await index.count(SCOPE) == 8 + 1


# The table as it was made when the vectors were split by workspace alone.
BY_WORKSPACE = """
CREATE TABLE {t} (id text NOT NULL, workspace text NOT NULL, observer text NOT NULL,
    observed text NOT NULL, level text NOT NULL, session_id text,
    created_at double precision NOT NULL, embedding vector(4) NOT NULL,
    PRIMARY KEY (workspace, id)) PARTITION BY HASH (workspace);
{parts}
CREATE INDEX {t}_by_id ON {t} (id);
CREATE INDEX {t}_by_scope ON {t} (workspace, observer, observed);
CREATE INDEX {t}_hnsw ON {t} USING hnsw (embedding vector_ip_ops) WITH (m = 16, ef_construction = 64);
"""


@pytest.mark.integration
async def test_pgvector_moves_a_table_split_by_workspace_to_one_split_by_representation(
    pg_pool,
) -> None:
    table = f"byws_{uuid.uuid4().hex[:12]}"
    points = [
        (f"o{i}", f"w{i % 2}", ("alice", "carol")[i % 4 // 2], f"[{1 + i % 3}, 1, 0, 0]")
        for i in range(40)
    ]
    ddl = BY_WORKSPACE.format(t=table, parts=partitions_ddl(table))
    index = await _made_before(pg_pool, ddl, table, points)
    assert await _layout(pg_pool, table) == ("HASH (workspace, observer, observed)", 16)
    async with pg_pool.connection() as conn:
        # Each representation's points in one partition.
        cur = await conn.execute(
            f"SELECT workspace, observer, count(DISTINCT tableoid) AS parts, count(*) AS n"
            f" FROM {table} GROUP BY 1, 2 ORDER BY 1, 2"
        )
        assert [
            (r["workspace"], r["observer"], r["parts"], r["n"]) for r in await cur.fetchall()
        ] == [
            ("w0", "alice", 1, 10),
            ("w0", "carol", 1, 10),
            ("w1", "alice", 1, 10),
            ("w1", "carol", 1, 10),
        ]
    found = await index.search(np.array([1.0, 0, 0, 0]), Scope("w1", "carol", "bob"), limit=20)
    assert sorted(h.id for h in found) == sorted(f"o{i}" for i in range(40) if i % 4 == 3)
    await index.upsert([_point("o40", 0.0, 1.0)])  # SCOPE's: w1, alice, bob
    await index.delete(["o7"])
    assert await index.count(Scope("w1", "carol", "bob")) == 9
    assert await index.count(SCOPE) == 10 + 1


@pytest.mark.integration
async def test_pgvector_keeps_each_workspaces_points_apart(pg_pool) -> None:
    # Split by workspace, a point is keyed by (workspace, id): one workspace's write of an id
    # never replaces another's point.
    index = PgVectorIndex(pg_pool, f"apart_{uuid.uuid4().hex[:12]}")
    await index.ensure(4, "m")
    mine, theirs = Scope("w1", "alice", "bob"), Scope("w2", "alice", "bob")
    payload = ObservationPayload("w2", "alice", "bob", "explicit", created_at=1.0)
    await index.upsert([_point("same", 1.0)])
    await index.upsert([VectorPoint("same", np.array([0, 1.0, 0, 0], dtype=np.float32), payload)])
    assert [h.score for h in await index.search(np.array([1.0, 0, 0, 0]), mine)] == [
        pytest.approx(1.0)
    ]
    assert [h.score for h in await index.search(np.array([1.0, 0, 0, 0]), theirs)] == [
        pytest.approx(0.0, abs=1e-6)
    ]
    async with pg_pool.connection() as conn:
        cur = await conn.execute(
            "SELECT tableoid::regclass::text AS part FROM "
            + index.table
            + " WHERE workspace = 'w1' LIMIT 1"
        )
        row = await cur.fetchone()
    assert row is not None and row["part"].startswith(index.table + "_p")
