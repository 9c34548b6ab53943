"""The engine confined to a set of sessions, and to a caller's filters, on real Postgres.

A derived observation counts as from a set of sessions only when its whole provenance is: the
memory projection records the sessions each observation rests on.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_context.app import build_engine
from mnemo_context.engine import RetrievalEngine
from mnemo_projector.entities import EntityProjection
from mnemo_projector.memory import MemoryProjection
from mnemo_projector.passages import PassageProjection
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.pg import open_pool
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema.errors import Refusal
from mnemo_schema.events import Event, MessagePosted, PeerCreated, Representation
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.retrieval import RetrievalQuery, RetrievalReply

from .retrieval_worlds import Logged

pytestmark = pytest.mark.integration
AT = datetime(2024, 5, 1, tzinfo=UTC)
ME = Representation(observer="ann", observed="ann")
SAID = {
    # message id: (session, text, metadata)
    "m1": ("work", "I work as a nurse at the children's hospital.", {"topic": "job", "n": 1}),
    "m2": ("work", "My shifts at the hospital start at six.", {"topic": "job", "n": 2}),
    "m3": ("home", "I live in Porto with my sister and her cat.", {"topic": "home", "n": 3}),
    "m4": ("home", "The hospital cafeteria near my flat is cheap.", {"n": 4}),
}


async def _apply(
    pool: AsyncConnectionPool, projection: object, batch: list[tuple[int, Event]]
) -> None:
    async with pool.connection() as conn, conn.transaction():
        await projection.apply(conn, batch)  # type: ignore[attr-defined]


def _explicit(ws: str, oid: str, mid: str, content: str, span: str) -> ObservationWritten:
    return ObservationWritten(
        workspace=ws,
        observation_id=oid,
        observer="ann",
        observed="ann",
        session_id=SAID[mid][0],
        content=content,
        source_message_ids=[mid],
        source_span=span,
    )


def _derived(ws: str, oid: str, content: str, premises: list[str]) -> ObservationWritten:
    return ObservationWritten(
        workspace=ws,
        observation_id=oid,
        observer="ann",
        observed="ann",
        level="deductive",
        content=content,
        premise_ids=premises,
        origin="dreamer",
    )


@pytest.fixture(scope="module")
async def world(pg_url: str) -> AsyncIterator[tuple[str, RetrievalEngine]]:
    ws = f"c-{uuid.uuid4().hex[:8]}"
    pool = await open_pool(pg_url, min_size=1, max_size=4)
    embedder = build_embedder("fake")
    index = PgVectorIndex(pool, table="confinement_vectors")
    passages = PassageProjection(embedder)
    async with pool.connection() as conn:
        await passages.setup(conn)
    events: list[Event] = [PeerCreated(workspace=ws, peer_id="ann", metadata={})]
    for i, (mid, (session, text, meta)) in enumerate(SAID.items()):
        events.append(
            MessagePosted(
                workspace=ws,
                session_id=session,
                message_id=mid,
                peer_id="ann",
                content=text,
                metadata=meta,
                created_at=AT + timedelta(hours=i),
                token_count=10,
                representations=[ME],
            )
        )
    batch = list(enumerate(events, start=1))
    await _apply(pool, EntityProjection(), batch)
    await _apply(pool, passages, batch)
    memory = MemoryProjection(embedder, index, cited=Logged(batch))
    async with pool.connection() as conn:
        await memory.setup(conn)
    obs: list[Event] = [
        _explicit(
            ws, "o1", "m1", "Ann works as a nurse at the children's hospital.", "I work as a nurse"
        ),
        _explicit(
            ws, "o2", "m2", "Ann's hospital shifts start at six.", "My shifts at the hospital"
        ),
        _explicit(ws, "o3", "m3", "Ann lives in Porto with her sister.", "I live in Porto"),
        _derived(ws, "d-work", "Ann works early hospital shifts as a nurse.", ["o1", "o2"]),
        _derived(ws, "d-both", "Ann's hospital job is in Porto, where she lives.", ["o1", "o3"]),
    ]
    await _apply(pool, memory, list(enumerate(obs, start=len(batch) + 1)))
    yield ws, build_engine(pool, MemoryAdapters(embedder, index))
    await pool.close()


async def _retrieve(world: tuple[str, RetrievalEngine], **kw: Any) -> RetrievalReply:
    ws, engine = world
    asked: dict[str, Any] = {"messages": 10, "observations": 10, **kw}
    query = RetrievalQuery(
        query="hospital nurse Porto shifts", observer="ann", observed="ann", **asked
    )
    return await engine.retrieve(ws, query)


async def _ask(world: tuple[str, RetrievalEngine], **kw: Any) -> tuple[set[str], set[str]]:
    reply = await _retrieve(world, **kw)
    return {m.message.id for m in reply.messages}, {o.id for o in reply.observations}


async def test_unconfined_reads_see_everything(world: tuple[str, RetrievalEngine]) -> None:
    messages, observations = await _ask(world)
    assert messages == {"m1", "m2", "m3", "m4"}
    assert observations == {"o1", "o2", "o3", "d-work", "d-both"}


async def test_an_observation_rests_on_its_own_messages_and_its_premises(
    world: tuple[str, RetrievalEngine],
) -> None:
    reply = await _retrieve(world, messages=0)
    sources = {o.id: sorted(o.source_message_ids) for o in reply.observations}
    assert sources == {
        "o1": ["m1"],
        "o2": ["m2"],
        "o3": ["m3"],
        "d-work": ["m1", "m2"],
        "d-both": ["m1", "m3"],
    }


async def test_a_set_of_sessions_confines_messages_and_provenance(
    world: tuple[str, RetrievalEngine],
) -> None:
    messages, observations = await _ask(world, sessions=["work"])
    assert messages == {"m1", "m2"}
    # d-both rests on a fact from "home" too: it is not from the "work" sessions alone.
    assert observations == {"o1", "o2", "d-work"}
    both = await _ask(world, sessions=["work", "home"])
    assert both == ({"m1", "m2", "m3", "m4"}, {"o1", "o2", "o3", "d-work", "d-both"})
    assert await _ask(world, sessions=[]) == (set(), set())
    # A single session and an allowlist together: their intersection.
    assert await _ask(world, session_id="home", sessions=["work"]) == (set(), set())


async def test_filters_confine_messages_and_observations(
    world: tuple[str, RetrievalEngine],
) -> None:
    messages, _ = await _ask(world, message_filters={"metadata": {"topic": "job"}})
    assert messages == {"m1", "m2"}
    messages, _ = await _ask(world, message_filters={"metadata": {"n": {"gte": 3}}})
    assert messages == {"m3", "m4"}
    messages, _ = await _ask(world, message_filters={"NOT": {"id": {"in": ["m1", "m4"]}}})
    assert messages == {"m2", "m3"}
    _, observations = await _ask(world, observation_filters={"level": "deductive"})
    assert observations == {"d-work", "d-both"}
    _, observations = await _ask(world, observation_filters={"source_ids": {"contains": "o3"}})
    assert observations == {"d-both"}


async def test_an_invalid_filter_is_refused_naming_it(world: tuple[str, RetrievalEngine]) -> None:
    with pytest.raises(Refusal) as err:
        await _ask(world, message_filters={"metadata": {"n": {"gte": 1, "near": 3}}})
    assert err.value.status == 422 and err.value.field == "filters.metadata.n.near"
