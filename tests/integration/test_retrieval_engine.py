"""The retrieval engine, component by component, on real LoCoMo turns with real MiniLM vectors.

The turns go through the real projections (entities, passages, memory) into a real Postgres;
the engine reads them as the service does. Each test shows one component earning its place.
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

from mnemo_bench.cases import Case
from mnemo_bench.readers import read_locomo
from mnemo_context.adapters.evidence import PostgresEvidence
from mnemo_context.app import build_engine
from mnemo_context.engine import EngineConfig, RetrievalEngine
from mnemo_deriver.local import derive
from mnemo_projector.entities import EntityProjection
from mnemo_projector.memory import MemoryProjection
from mnemo_projector.passages import PassageProjection, split_passages
from mnemo_runtime.deriver_contract import BatchMessage
from mnemo_runtime.embeddings import Embedder, build_embedder
from mnemo_runtime.memory.store import RepresentationStore
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.pg import open_pool
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema.events import Event, MessagePosted, PeerCreated, Representation
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.retrieval import RetrievalQuery

pytestmark = pytest.mark.integration

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
        workspace=ws, session_id="s" + turn_id.split(":")[0].lstrip("D"), message_id=f"m-{turn_id}",
        peer_id=peer, content=text, metadata={"turn_id": turn_id}, created_at=at,
        token_count=len(text.split()),
        representations=[Representation(observer=peer, observed=peer)],
    )  # fmt: skip


async def _apply(
    pool: AsyncConnectionPool, projection: object, batch: list[tuple[int, Event]]
) -> None:
    async with pool.connection() as conn, conn.transaction():
        await projection.apply(conn, batch)  # type: ignore[attr-defined]


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
    last = turns[-1].at + timedelta(days=30)  # type: ignore[operator]
    events.append(_message(ws, "D9:1", "Melanie", LONG, last))
    events.append(_message(ws, "D9:2", "Caroline", "I moved to Lisbon for a new job.", last))
    events.append(
        _message(ws, "D9:3", "Caroline", "I now live in Porto.", last + timedelta(days=60))
    )
    # What the deriver would write: statements of the speaker, relative dates resolved.
    observed = [
        ("D1:3", "caroline", "Caroline went to a LGBTQ support group on 7 May 2023.",
         "I went to a LGBTQ support group yesterday"),
        ("D1:14", "melanie", "Melanie painted a lake sunrise in 2022.",
         "I painted that lake sunrise last year"),
        ("D2:8", "caroline", "Caroline is researching adoption agencies.",
         "Researching adoption agencies"),
    ]  # fmt: skip
    obs = [
        ObservationWritten(
            workspace=ws, observation_id=f"o-{turn}", observer=peer, observed=peer,
            content=text, source_message_ids=[f"m-{turn}"], source_span=span,
        )
        for turn, peer, text, span in observed
    ]  # fmt: skip
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
    memory = MemoryProjection(embedder, index, RepresentationStore(pool))
    async with pool.connection() as conn:
        await passages.setup(conn)
        await memory.setup(conn)
    batch = list(enumerate(events, start=1))
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


async def test_lexical_ranking_finds_rare_words(world: World) -> None:
    assert (await top(world, "adoption agencies", 3, without={"dense", "facts"}))[0] == "D2:8"
    # BM25's idf: one rare word outweighs several common ones.
    got = await top(world, "what did you do with the violin", 3, without={"dense", "facts"})
    assert got[0] == "D2:5"


async def test_dense_ranking_finds_a_paraphrase_that_shares_no_word(world: World) -> None:
    question = "Which musical instrument does she practise?"
    assert "D2:5" not in await top(world, question, 5, without={"dense", "facts"})
    assert "D2:5" in await top(world, question, 5, without={"lexical", "facts"})


async def test_a_long_message_is_found_by_its_best_passage(world: World) -> None:
    spans = split_passages(LONG)
    assert len(spans) > 2 and all(b > a for a, b in spans)
    reply = await world.engine.retrieve(
        world.ws, RetrievalQuery(query="what is in the compost?", messages=3)
    )
    best = reply.messages[0]
    assert world.turns[best.message.id] == "D9:1"
    assert best.passage is not None and best.passage != (0, len(LONG))
    assert "eggshells" in LONG[best.passage[0] : best.passage[1]]


async def test_an_observation_lifts_the_message_it_came_from(world: World) -> None:
    # "7 May 2023" is in the observation only: the message says "yesterday".
    question = "What happened on 7 May 2023?"
    assert "D1:3" not in await top(world, question, 3, without={"facts", "time"})
    assert "D1:3" in await top(world, question, 3, without={"time"})


async def test_a_message_lifts_the_observations_derived_from_it(world: World) -> None:
    query = RetrievalQuery(
        query="Researching adoption agencies", observer="caroline", observed="caroline",
        messages=0, observations=3,
    )  # fmt: skip
    reply = await world.engine.retrieve(world.ws, query)
    assert reply.observations[0].id == "o-D2:8"
    assert "facts.lexical" in reply.observations[0].found_by


async def test_a_named_peer_counts_for_more(world: World) -> None:
    question = "How does Melanie feel about the support group?"
    named = await top(world, question, 5)
    unnamed = await top(world, question, 5, without={"names"})

    def place(ranking: list[str]) -> int:  # where Melanie's answer about the group ranks
        return ranking.index("D1:6") if "D1:6" in ranking else len(ranking)

    assert place(named) < place(unnamed)


async def test_a_time_window_prefers_evidence_from_inside_it(world: World) -> None:
    question = "What did Caroline say about her family in May 2023?"
    in_may = await top(world, question, 5)
    assert all(t.startswith(("D1:", "D2:")) for t in in_may[:3])  # sessions of May 2023


async def test_a_question_about_now_prefers_the_newest_value(world: World) -> None:
    question = "Where does Caroline live now?"
    assert (await top(world, question, 2))[0] == "D9:3"


async def test_every_query_gets_a_valid_answer(world: World) -> None:
    for text in ("the a of", "x" * 10_000, "Где живёт Каролина?", "日本語の質問", "?!"):
        reply = await world.engine.retrieve(
            world.ws, RetrievalQuery(query=text, messages=5, observations=5)
        )
        assert len(reply.messages) <= 5 and len(reply.observations) <= 5
    nobody = RetrievalQuery(
        query="anything", observer="melanie", observed="caroline", observations=5
    )
    assert (await world.engine.retrieve(world.ws, nobody)).observations == []
    empty = await world.engine.retrieve("no-such-workspace", RetrievalQuery(query="anything"))
    assert empty.messages == [] and empty.observations == []


async def test_each_message_comes_with_the_turn_it_answered(world: World) -> None:
    reply = await world.engine.retrieve(world.ws, RetrievalQuery(query="adoption agencies"))
    hit = next(m for m in reply.messages if world.turns[m.message.id] == "D2:8")
    assert hit.previous is not None and world.turns[hit.previous.id] == "D2:7"
    assert hit.previous.peer_id != hit.message.peer_id
    assert len({m.message.id for m in reply.messages}) == len(reply.messages)


class Reversing:
    """A reranker that prefers what the engine ranked last, and records what it was shown."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        self.shown = list(texts)
        return [float(i) for i in range(len(texts))]


async def test_a_configured_reranker_orders_the_head_and_can_be_switched_off(world: World) -> None:
    reranker = Reversing()
    engine = RetrievalEngine(PostgresEvidence(world.pool), world.memory, reranker=reranker)
    query = RetrievalQuery(query="adoption agencies", messages=3)
    plain = [m.message.id for m in (await world.engine.retrieve(world.ws, query)).messages]
    reranked = [m.message.id for m in (await engine.retrieve(world.ws, query)).messages]
    assert reranker.shown and reranked[0] != plain[0]
    assert world.engine.components() == engine.components() - {"rerank"}
    off = query.model_copy(update={"without": frozenset({"rerank"})})
    assert [m.message.id for m in (await engine.retrieve(world.ws, off)).messages] == plain


@pytest.fixture(scope="module")
async def derived(pg_url: str, embedder: Embedder) -> AsyncIterator[World]:
    """Sessions 1-3 of conv-26 with what the local deriver finds in them about each speaker."""
    case, ws, pool, events = await _conversation(pg_url)
    obs: list[ObservationWritten] = []
    for session in case.sessions[:3]:
        events += [_message(ws, t.id, t.speaker, t.text, t.at) for t in session.turns]
        for speaker in ("Caroline", "Melanie"):
            batch = [
                BatchMessage(i, t.speaker, t.text, t.at, is_context=t.speaker != speaker)  # type: ignore[arg-type]
                for i, t in enumerate(session.turns)
            ]
            for n, o in enumerate(derive(speaker, batch).observations):
                turn = session.turns[o.source_message_index].id
                obs.append(
                    ObservationWritten(
                        workspace=ws, observation_id=f"o-{turn}-{n}", observer=speaker.lower(),
                        observed=speaker.lower(), content=o.fact,
                        source_message_ids=[f"m-{turn}"], source_span=o.source_span,
                    )
                )  # fmt: skip
    adapters = await _project(pool, embedder, events, obs)
    ids = {t.id: f"m-{t.id}" for s in case.sessions[:3] for t in s.turns}
    yield World(
        ws, build_engine(pool, adapters), pool, adapters, ids, {v: k for k, v in ids.items()}
    )
    await pool.close()


async def test_a_diverse_slice_rests_on_more_messages(derived: World) -> None:
    async def sources(question: str, diverse: bool) -> list[str]:
        query = RetrievalQuery(
            query=question, observer="caroline", observed="caroline", messages=0,
            observations=6, diverse=diverse,
        )  # fmt: skip
        reply = await derived.engine.retrieve(derived.ws, query)
        assert len(reply.observations) == 6
        return [derived.turns[o.source_message_ids[0]] for o in reply.observations]

    # A long turn yields several observations, which crowd a plain ranking of what it says.
    for question in (
        "What did Caroline share in her talk about her journey?",
        "What did Caroline say about the trans community?",
    ):
        plain, diverse = await sources(question, False), await sources(question, True)
        assert diverse[0] == plain[0]
        assert len(set(diverse)) == len(diverse) > len(set(plain))
        # What a plain ranking finds is kept, each message once, before what it did not find.
        found = list(dict.fromkeys(plain))
        assert diverse[: len(found)] == found


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


async def test_long_messages_do_not_crowd_out_the_short_ones(documents: World) -> None:
    # Each long message has about fifty passages, all alike, and all of them match the
    # question better than the short turns do: read only as deep as the top ten needs, the
    # passage lists would name nothing but the three long messages.
    assert len(split_passages(PLAN * 280)) >= 45
    got = await top(documents, "What is the plan for the garden this year?", 10)
    assert set(got[:3]) == {"D1:1", "D1:2", "D1:3"}
    assert {"D2:1", "D2:2", "D2:3"} <= set(got)


async def test_passage_lists_run_as_deep_as_the_messages_they_name(
    world: World, documents: World
) -> None:
    def shallow(w: World) -> RetrievalEngine:
        return RetrievalEngine(PostgresEvidence(w.pool), w.memory, config=EngineConfig(depth=5))

    # One passage a message: the lists stop at twice the depth of messages, as deep as before.
    g = await shallow(world).gather(
        world.ws, RetrievalQuery(query="What did Melanie paint?", messages=1)
    )
    for hits in g.found.passages.values():
        assert len({h.message_id for h in hits}) <= 10 <= len(world.ids)
    assert len({h.message_id for h in g.found.passages["dense"]}) == 10
    # Long messages: the lists read on, up to four times the depth of passages.
    question = RetrievalQuery(query="What is the plan for the garden this year?", messages=1)
    g = await shallow(documents).gather(documents.ws, question)
    dense = g.found.passages["dense"]
    assert len(dense) == 20 and len({h.message_id for h in dense}) < 10
