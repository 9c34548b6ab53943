"""The query vectors the retrieval engine remembers: per workspace, bounded, for a while.

Real MiniLM vectors, the real projections and a real Postgres; the embedder is the real one,
wrapped to count the queries it embeds.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_context.adapters.evidence import PostgresEvidence
from mnemo_context.engine import EngineConfig, RetrievalEngine
from mnemo_projector.entities import EntityProjection
from mnemo_projector.passages import PassageProjection
from mnemo_runtime.embeddings import Embedder, Vector, Vectors, build_embedder
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.pg import open_pool
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema.events import Event, MessagePosted, PeerCreated, Representation
from mnemo_schema.retrieval import RetrievalQuery

pytestmark = pytest.mark.integration

TURNS = [
    "I practise the violin every evening before dinner.",
    "We painted the lake at sunrise last summer.",
    "My sister is moving to Lisbon in the spring.",
]


class Counting:
    """The real embedder, counting the queries it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.queries: list[str] = []
        self.model_name = inner.model_name
        self.dimension = inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return await self.inner.embed(texts)

    async def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return await self.inner.embed_query(text)


async def _workspace(pool: AsyncConnectionPool, embedder: Embedder) -> str:
    """A workspace whose turns went through the entity and passage projections."""
    ws = f"w-{uuid.uuid4().hex[:8]}"
    at = datetime(2023, 5, 1, tzinfo=UTC)
    events: list[Event] = [PeerCreated(workspace=ws, peer_id="ana", metadata={})]
    events += [
        MessagePosted(
            workspace=ws,
            session_id="s1",
            message_id=f"m-{n}",
            peer_id="ana",
            content=text,
            metadata={},
            created_at=at + timedelta(minutes=n),
            token_count=len(text.split()),
            representations=[Representation(observer="ana", observed="ana")],
        )
        for n, text in enumerate(TURNS)
    ]
    passages = PassageProjection(embedder)
    batch = list(enumerate(events, start=1))
    async with pool.connection() as conn:
        await passages.setup(conn)
    for projection in (EntityProjection(), passages):
        async with pool.connection() as conn, conn.transaction():
            await projection.apply(conn, batch)  # type: ignore[attr-defined]
    return ws


@pytest.fixture(scope="module")
async def pool(pg_url: str) -> AsyncIterator[AsyncConnectionPool]:
    pool = await open_pool(pg_url, min_size=1, max_size=4)
    yield pool
    await pool.close()


async def test_a_question_asked_again_in_a_workspace_is_not_embedded_again(
    pool: AsyncConnectionPool,
) -> None:
    counting = Counting(build_embedder("minilm", workers=1, query_int8=False))
    index = PgVectorIndex(pool)
    await index.ensure(counting.dimension, counting.model_name)
    memory = MemoryAdapters(counting, index)  # type: ignore[arg-type]
    ws, other = await _workspace(pool, counting), await _workspace(pool, counting)

    def engine(cache: int, seconds: float = 60.0) -> RetrievalEngine:
        config = EngineConfig(query_cache=cache, query_cache_s=seconds)
        return RetrievalEngine(PostgresEvidence(pool), memory, config=config)

    cached, uncached, expired = engine(2), engine(0), engine(2, seconds=0.0)
    question = RetrievalQuery(query="Which musical instrument does she play?", messages=2)
    first = await cached.retrieve(ws, question)
    again = await cached.retrieve(ws, question)
    assert [m.message.id for m in first.messages][:1] == ["m-0"]
    assert [m.message.id for m in again.messages] == [m.message.id for m in first.messages]
    assert [m.score for m in again.messages] == [m.score for m in first.messages]
    assert len(counting.queries) == 1
    # Another workspace asking the same is embedded for itself; the oldest question goes first.
    await cached.retrieve(other, question)
    await cached.retrieve(ws, RetrievalQuery(query="Who painted a lake?", messages=2))
    await cached.retrieve(ws, question)
    assert len(counting.queries) == 4
    # With no cache, or once a vector has been kept its time, every read embeds.
    await uncached.retrieve(ws, question)
    await uncached.retrieve(ws, question)
    assert len(counting.queries) == 6
    await expired.retrieve(ws, question)
    await expired.retrieve(ws, question)
    assert len(counting.queries) == 8
