"""A sender with many passages gets a vector graph of its own (``sender_graphs``): built once it
has enough, used by a representation's search, dropped with the sender, built again when a build
was left unfinished."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from mnemo_context.adapters import lists
from mnemo_context.adapters.evidence import PostgresEvidence
from mnemo_context.ports import OPEN, ListsAsk, PassageAsk
from mnemo_projector.passages import PassageProjection
from mnemo_projector.sender_graphs import SenderGraphs, graph_name
from mnemo_runtime.embeddings import Embedder, build_embedder
from mnemo_runtime.pg import Pool, open_pool
from mnemo_runtime.vectors.pgvector import vector_literal
from mnemo_schema.events import Event, MessagePosted, PeerDeleted, Representation, WorkspaceDeleted

pytestmark = pytest.mark.integration

AT = 6
SAID = [
    "I adopted a grey cat from the shelter last spring.",
    "My sister runs a bakery near the harbour.",
    "We hiked the ridge trail before sunrise on Sunday.",
    "The violin lessons start again in September.",
    "I planted tomatoes and basil on the balcony.",
    "Our team shipped the billing service on Friday.",
    "I am reading a novel about a lighthouse keeper.",
    "The kids built a treehouse in the old oak.",
]


@dataclass
class Stack:
    pool: Pool
    embedder: Embedder
    projection: PassageProjection
    graphs: SenderGraphs
    seq: int = 0

    async def apply(self, *events: Event) -> None:
        batch = []
        for e in events:
            self.seq += 1
            batch.append((self.seq, e))
        async with self.pool.connection() as conn, conn.transaction():
            await self.projection.apply(conn, batch)


def said(ws: str, peer: str, n: int) -> MessagePosted:
    return MessagePosted(
        workspace=ws,
        session_id="s",
        message_id=f"{peer}-{n}",
        peer_id=peer,
        content=SAID[n % len(SAID)] + f" ({peer}, {n})",
        metadata={},
        token_count=16,
        created_at=datetime(2024, 3, 1, tzinfo=UTC) + timedelta(minutes=n),
        representations=[Representation(observer=peer, observed=peer)],
    )


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return build_embedder("minilm", workers=1, query_int8=False)


@pytest.fixture
async def stack(fresh_database: str, embedder: Embedder) -> AsyncIterator[Stack]:
    pool = await open_pool(fresh_database, min_size=1, max_size=4)
    # Built when a test asks (``graphs``): the projection's own look for due graphs is off.
    graphs = SenderGraphs(pool, AT, every_s=0.0)
    projection = PassageProjection(embedder, SenderGraphs(pool, 0))
    async with pool.connection() as conn:
        await projection.setup(conn)
    yield Stack(pool, embedder, projection, graphs)
    await pool.close()


async def one(pool: Pool, query: str, *args: Any) -> dict[str, Any] | None:
    async with pool.connection() as conn:
        cur = await conn.execute(query, args)
        row: dict[str, Any] | None = await cur.fetchone()
        return row


async def valid(pool: Pool, name: str) -> bool | None:
    """Whether the index ``name`` is valid (None: there is none)."""
    row = await one(
        pool, "SELECT indisvalid AS ok FROM pg_index WHERE indexrelid = to_regclass(%s)", name
    )
    return None if row is None else bool(row["ok"])


async def recorded(pool: Pool) -> list[tuple[str, str]]:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT workspace, peer_id FROM sender_graphs ORDER BY 1, 2")
        return [(r["workspace"], r["peer_id"]) for r in await cur.fetchall()]


async def test_a_sender_with_many_passages_gets_a_graph_that_its_search_reads(
    stack: Stack,
) -> None:
    # alice reaches the threshold, bob stays below it, carol is large in another workspace.
    await stack.apply(*[said("w1", "alice", n) for n in range(AT)])
    await stack.apply(*[said("w1", "bob", n) for n in range(AT - 1)])
    await stack.apply(*[said("w2", "carol", n) for n in range(AT + 2)])
    assert await stack.graphs.build_due() == 2
    assert await recorded(stack.pool) == [("w1", "alice"), ("w2", "carol")]
    assert await valid(stack.pool, graph_name("w1", "alice")) is True
    assert await valid(stack.pool, graph_name("w1", "bob")) is None
    assert await stack.graphs.build_due() == 0  # nothing new

    # The statement planned for one sender's values can read that sender's graph (the others
    # ways turned off: with a few rows the planner rightly prefers to sort them).
    vector = await stack.embedder.embed_query("Where does her sister work?")
    ask = PassageAsk(["alice"], None, OPEN, 5, 5)
    model = stack.embedder.model_name
    ctes, params = lists.dense_passages(ask, vector_literal(vector), model)
    async with stack.pool.connection() as conn, conn.transaction():
        for off in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            await conn.execute(f"SET LOCAL {off} = off")
        cur = psycopg.AsyncClientCursor(conn)
        await cur.execute(
            f"EXPLAIN WITH {ctes} SELECT * FROM pc", {"ws": "w1", **params}, prepare=False
        )
        plan = "\n".join(r["QUERY PLAN"] for r in await cur.fetchall())
    assert graph_name("w1", "alice") in plan, plan
    # And what it finds is alice's nearest passages.
    got = await PostgresEvidence(stack.pool).dense("w1", vector, model, ListsAsk(ask))
    assert {h.message_id for h in got.passages} <= {f"alice-{n}" for n in range(AT)}
    assert got.passages[0].message_id == "alice-1"  # the bakery


async def test_a_partition_holds_at_most_so_many_sender_graphs(stack: Stack) -> None:
    # A workspace's senders share its partition: with room for one graph, the first takes it.
    await stack.apply(*[said("w1", p, n) for p in ("alice", "bob") for n in range(AT)])
    one = SenderGraphs(stack.pool, AT, every_s=0.0, per_partition=1)
    assert await one.build_due() == 1
    assert await recorded(stack.pool) == [("w1", "alice")]
    assert await valid(stack.pool, graph_name("w1", "bob")) is None


async def test_erasing_a_sender_or_its_workspace_drops_its_graph(stack: Stack) -> None:
    await stack.apply(*[said("w1", p, n) for p in ("alice", "bob") for n in range(AT)])
    await stack.apply(*[said("w2", "carol", n) for n in range(AT)])
    assert await stack.graphs.build_due() == 3
    await stack.apply(PeerDeleted(workspace="w1", peer_id="alice"))
    assert await valid(stack.pool, graph_name("w1", "alice")) is None
    assert await recorded(stack.pool) == [("w1", "bob"), ("w2", "carol")]
    await stack.apply(WorkspaceDeleted(workspace="w2"))
    assert await valid(stack.pool, graph_name("w2", "carol")) is None
    assert await recorded(stack.pool) == [("w1", "bob")]


async def test_an_unfinished_graph_is_built_again_and_a_lost_one_forgotten(
    stack: Stack, embedder: Embedder
) -> None:
    await stack.apply(*[said("w1", "alice", n) for n in range(AT)])
    assert await stack.graphs.build_due() == 1
    name = graph_name("w1", "alice")
    # As a build cut short by a stop leaves it: in the catalog, not valid (never read).
    async with stack.pool.connection() as conn:
        await conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", (name,)
        )
    assert await valid(stack.pool, name) is False
    fresh = SenderGraphs(stack.pool, AT, every_s=0.0)  # a process started again
    assert await fresh.build_due() == 1
    assert await valid(stack.pool, name) is True
    # The table made again (another model): the record of its graph goes at setup.
    async with stack.pool.connection() as conn:
        await conn.execute("DROP TABLE message_passages")
    async with stack.pool.connection() as conn:
        await PassageProjection(embedder, fresh).setup(conn)
    assert await recorded(stack.pool) == []


async def test_the_graphs_are_built_in_the_background_when_due(
    stack: Stack, embedder: Embedder
) -> None:
    graphs = SenderGraphs(stack.pool, AT, every_s=3600.0)
    stack.projection = PassageProjection(embedder, graphs)
    await stack.apply(*[said("w1", "alice", n) for n in range(AT)])
    # Applying a batch starts the look for due graphs; it runs beside the projection.
    building = graphs.building
    assert building is not None
    assert await building == 1
    assert await valid(stack.pool, graph_name("w1", "alice")) is True
    # Not again before it is due; never when off (0).
    await stack.apply(*[said("w1", "bob", n) for n in range(AT)])
    assert graphs.building is None
    off = SenderGraphs(stack.pool, 0, every_s=0.0)
    off.upkeep()
    assert off.building is None
