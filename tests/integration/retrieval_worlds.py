"""The worlds the retrieval engine's tests read: real LoCoMo turns, through the real projections.

The turns go through the real projections (entities, passages, memory) into a real Postgres,
with real MiniLM vectors; the engine reads them as the service does.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_bench.cases import Case, Turn
from mnemo_bench.readers import read_locomo
from mnemo_context.app import build_engine
from mnemo_context.engine import RetrievalEngine
from mnemo_deriver.contract import BatchMessage
from mnemo_deriver.local import derive
from mnemo_projector.entities import EntityProjection
from mnemo_projector.memory import MemoryProjection
from mnemo_projector.passages import PassageProjection
from mnemo_projector.positions import Projection
from mnemo_runtime.embeddings import Embedder, build_embedder
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.pg import open_pool
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema.events import Event, MessagePosted, PeerCreated, Representation
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.retrieval import RetrievalQuery

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
LOCOMO = DATA / "locomo" / "locomo-dev5.json"
LONG = (
    "Here is the plan for the garden this year. " * 40
    + "The secret ingredient of my compost is crushed eggshells from the bakery next door. "
    + "I will water the beans every other morning. " * 20
)


@dataclass
class World:
    ws: str
    engine: RetrievalEngine
    pool: AsyncConnectionPool
    memory: MemoryAdapters
    ids: dict[str, str]  # dataset turn id -> message id
    turns: dict[str, str]  # message id -> dataset turn id


def _message(ws: str, turn_id: str, speaker: str, text: str, at: object) -> MessagePosted:
    peer = speaker.lower()
    return MessagePosted(
        workspace=ws,
        session_id="s" + turn_id.split(":")[0].lstrip("D"),
        message_id=f"m-{turn_id}",
        peer_id=peer,
        content=text,
        metadata={"turn_id": turn_id},
        created_at=at,
        token_count=len(text.split()),
        representations=[Representation(observer=peer, observed=peer)],
    )


async def _apply(
    pool: AsyncConnectionPool, projection: Projection, batch: list[tuple[int, Event]]
) -> None:
    async with pool.connection() as conn, conn.transaction():
        await projection.apply(conn, batch)


def _at(turn: Turn) -> datetime:
    """When a turn was said: every LoCoMo session these worlds read is dated."""
    assert turn.at is not None, f"turn {turn.id} has no date"
    return turn.at


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    # Full-precision query vectors: these tests pin the engine's ranking, not how the int8 query
    # weights round on a given CPU's kernels.
    return build_embedder("minilm", workers=2, query_int8=False)


@pytest.fixture(scope="module")
async def world(pg_url: str, embedder: Embedder) -> AsyncIterator[World]:
    case, ws, pool, events = await _conversation(pg_url)
    turns = [t for s in case.sessions[:3] for t in s.turns]
    events += [_message(ws, t.id, t.speaker, t.text, t.at) for t in turns]
    last = _at(turns[-1]) + timedelta(days=30)
    events.append(_message(ws, "D9:1", "Melanie", LONG, last))
    events.append(_message(ws, "D9:2", "Caroline", "I moved to Lisbon for a new job.", last))
    events.append(
        _message(ws, "D9:3", "Caroline", "I now live in Porto.", last + timedelta(days=60))
    )
    # What the deriver would write: statements of the speaker, relative dates resolved.
    observed = [
        (
            "D1:3",
            "caroline",
            "Caroline went to a LGBTQ support group on 7 May 2023.",
            "I went to a LGBTQ support group yesterday",
        ),
        (
            "D1:14",
            "melanie",
            "Melanie painted a lake sunrise in 2022.",
            "I painted that lake sunrise last year",
        ),
        (
            "D2:8",
            "caroline",
            "Caroline is researching adoption agencies.",
            "Researching adoption agencies",
        ),
    ]
    obs = [
        ObservationWritten(
            workspace=ws,
            observation_id=f"o-{turn}",
            observer=peer,
            observed=peer,
            content=text,
            source_message_ids=[f"m-{turn}"],
            source_span=span,
        )
        for turn, peer, text, span in observed
    ]
    adapters = await _project(pool, embedder, events, obs)
    engine = build_engine(pool, adapters)
    ids = {t.id: f"m-{t.id}" for t in turns} | {f"D9:{i}": f"m-D9:{i}" for i in (1, 2, 3)}
    yield World(ws, engine, pool, adapters, ids, {v: k for k, v in ids.items()})
    await pool.close()


async def _conversation(pg_url: str) -> tuple[Case, str, AsyncConnectionPool, list[Event]]:
    """conv-26, a fresh workspace, a pool, and the events that create its two peers."""
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO}")
    case = next(c for c in read_locomo(LOCOMO) if c.id == "conv-26")
    ws = f"w-{uuid.uuid4().hex[:8]}"
    pool = await open_pool(pg_url, min_size=1, max_size=6)
    events: list[Event] = [
        PeerCreated(workspace=ws, peer_id=p, metadata={}) for p in ("caroline", "melanie")
    ]
    return case, ws, pool, events


class Logged:
    """The messages among events applied at their positions: what the log holds of them."""

    def __init__(self, batch: Sequence[tuple[int, Event]]) -> None:
        self._at = {seq: e for seq, e in batch if isinstance(e, MessagePosted)}

    async def at(self, seqs: Sequence[int]) -> dict[int, MessagePosted | None]:
        return {s: self._at.get(s) for s in seqs}


async def _project(
    pool: AsyncConnectionPool,
    embedder: Embedder,
    events: Sequence[Event],
    observations: Sequence[ObservationWritten],
) -> MemoryAdapters:
    """``events`` through the entity and passage projections, then ``observations`` through
    the memory projection; the adapters the engine reads the vectors with."""
    index = PgVectorIndex(pool)
    passages = PassageProjection(embedder)
    batch = list(enumerate(events, start=1))
    memory = MemoryProjection(embedder, index, cited=Logged(batch))
    async with pool.connection() as conn:
        await passages.setup(conn)
        await memory.setup(conn)
    await _apply(pool, EntityProjection(), batch)
    await _apply(pool, passages, batch)
    await _apply(pool, memory, list(enumerate(observations, start=len(batch) + 1)))
    return MemoryAdapters(embedder, index)


async def top(world: World, question: str, k: int = 5, **kw: object) -> list[str]:
    """The dataset turn ids of the engine's best ``k`` messages."""
    reply = await world.engine.retrieve(
        world.ws,
        RetrievalQuery(query=question, messages=k, **kw),
    )
    return [world.turns[m.message.id] for m in reply.messages]


@pytest.fixture(scope="module")
async def derived(pg_url: str, embedder: Embedder) -> AsyncIterator[World]:
    """Sessions 1-3 of conv-26 with what the local deriver finds in them about each speaker."""
    case, ws, pool, events = await _conversation(pg_url)
    obs: list[ObservationWritten] = []
    for session in case.sessions[:3]:
        events += [_message(ws, t.id, t.speaker, t.text, t.at) for t in session.turns]
        for speaker in ("Caroline", "Melanie"):
            batch = [
                BatchMessage(i, t.speaker, t.text, _at(t), is_context=t.speaker != speaker)
                for i, t in enumerate(session.turns)
            ]
            for n, o in enumerate(derive(speaker, batch).observations):
                turn = session.turns[o.source_message_index].id
                obs.append(
                    ObservationWritten(
                        workspace=ws,
                        observation_id=f"o-{turn}-{n}",
                        observer=speaker.lower(),
                        observed=speaker.lower(),
                        content=o.fact,
                        source_message_ids=[f"m-{turn}"],
                        source_span=o.source_span,
                    )
                )
    adapters = await _project(pool, embedder, events, obs)
    ids = {t.id: f"m-{t.id}" for s in case.sessions[:3] for t in s.turns}
    yield World(
        ws, build_engine(pool, adapters), pool, adapters, ids, {v: k for k, v in ids.items()}
    )
    await pool.close()


PLAN = "Here is the plan for the garden this year: tomatoes, beans and squash along the fence. "
GARDEN_NOTES = (
    "Melanie said the heirloom carrots she sowed in March are finally up.",
    "Caroline asked whether the compost bin could move behind the shed.",
    "Melanie wants a rain barrel under the gutter before the summer.",
)


@pytest.fixture(scope="module")
async def documents(pg_url: str, embedder: Embedder) -> AsyncIterator[World]:
    """Three long messages that restate one plan over dozens of passages each, and three short
    turns about the same garden."""
    _, ws, pool, events = await _conversation(pg_url)
    at = datetime(2023, 5, 1, tzinfo=UTC)
    for n in range(3):
        events.append(_message(ws, f"D1:{n + 1}", "Caroline", PLAN * 280, at))
    for n, text in enumerate(GARDEN_NOTES):
        events.append(_message(ws, f"D2:{n + 1}", "Melanie", text, at + timedelta(days=n + 1)))
    adapters = await _project(pool, embedder, events, [])
    ids = {f"D{s}:{n}": f"m-D{s}:{n}" for s in (1, 2) for n in (1, 2, 3)}
    yield World(
        ws, build_engine(pool, adapters), pool, adapters, ids, {v: k for k, v in ids.items()}
    )
    await pool.close()


CROWD = 48


@pytest.fixture(scope="module")
async def crowd(pg_url: str, embedder: Embedder) -> AsyncIterator[World]:
    """The turns of conv-26's first three sessions, each said by one of ``CROWD`` peers in
    turn: a workspace of many senders."""
    case, ws, pool, events = await _conversation(pg_url)
    turns = [t for s in case.sessions[:3] for t in s.turns]
    speakers = [f"peer-{n:02d}" for n in range(CROWD)]
    events += [_message(ws, t.id, speakers[n % CROWD], t.text, t.at) for n, t in enumerate(turns)]
    adapters = await _project(pool, embedder, events, [])
    ids = {t.id: f"m-{t.id}" for t in turns}
    yield World(
        ws, build_engine(pool, adapters), pool, adapters, ids, {v: k for k, v in ids.items()}
    )
    await pool.close()
