"""The retrieval engine, component by component, on real LoCoMo turns with real MiniLM vectors.

The worlds (``retrieval_worlds``) go through the real projections into a real Postgres; the
engine reads them as the service does. Each test shows one component earning its place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pytest

from mnemo_context.adapters import lists
from mnemo_context.adapters.evidence import PostgresEvidence
from mnemo_context.engine import EngineConfig, RetrievalEngine
from mnemo_context.ports import OPEN, ListsAsk, PassageAsk, PassageHit
from mnemo_projector.passages import split_passages
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_runtime.vectors.pgvector import vector_literal
from mnemo_schema.retrieval import RetrievalQuery

from . import retrieval_worlds
from .retrieval_worlds import CROWD, LOCOMO, LONG, PLAN, World, top

# The worlds, module-scoped fixtures each test below asks for by name.
embedder = retrieval_worlds.embedder
world = retrieval_worlds.world
derived = retrieval_worlds.derived
documents = retrieval_worlds.documents
crowd = retrieval_worlds.crowd

pytestmark = pytest.mark.integration


async def test_lexical_ranking_finds_rare_words(world: World) -> None:
    assert (await top(world, "adoption agencies", 3, without={"dense", "facts"}))[0] == "D2:8"
    # BM25's idf: one rare word outweighs several common ones.
    got = await top(world, "what did you do with the violin", 3, without={"dense", "facts"})
    assert got[0] == "D2:5"


async def test_a_lexical_score_is_the_bm25_of_the_workspace_postings(world: World) -> None:
    # Each passage's score, as the statement computes it, against BM25 worked out here from the
    # lexicon's own rows: the question's terms, their document frequencies, each posting's tf
    # and document length, and the workspace's average length.
    question = "What did Melanie paint for the shelter, and why did she paint it?"
    got = await PostgresEvidence(world.pool).lexical(
        world.ws, question, ListsAsk(PassageAsk(None, None, OPEN, 300, 300))
    )
    assert len(got.passages) > 5
    async with world.pool.connection() as conn:
        terms = [
            r["t"]
            for r in await (
                await conn.execute(
                    "SELECT DISTINCT lexeme AS t FROM unnest(to_tsvector('english', %s))",
                    (question,),
                )
            ).fetchall()
        ]
        stats = await (
            await conn.execute(
                "SELECT docs, length FROM search_docs WHERE workspace = %s AND kind = 'm'",
                (world.ws,),
            )
        ).fetchone()
        df = {
            r["term"]: r["df"]
            for r in await (
                await conn.execute(
                    "SELECT term, df FROM search_df WHERE workspace = %s AND kind = 'm'"
                    " AND term = ANY(%s)",
                    (world.ws, terms),
                )
            ).fetchall()
        }
        postings = await (
            await conn.execute(
                "SELECT doc, part, term, tf, dl FROM search_terms WHERE workspace = %s"
                " AND kind = 'm' AND term = ANY(%s)",
                (world.ws, terms),
            )
        ).fetchall()
    assert stats is not None and len(df) >= 2
    n, avgdl = stats["docs"], stats["length"] / stats["docs"]
    expected: dict[tuple[str, int], float] = {}
    for p in postings:
        idf = math.log(1 + (n - df[p["term"]] + 0.5) / (df[p["term"]] + 0.5))
        norm = p["tf"] + lists.K1 * (1 - lists.B + lists.B * p["dl"] / avgdl)
        key = (p["doc"], p["part"])
        expected[key] = expected.get(key, 0.0) + idf * p["tf"] * (lists.K1 + 1) / norm
    for hit in got.passages:
        assert hit.score == pytest.approx(expected[(hit.message_id, hit.passage)], rel=1e-12)
    best = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[: len(got.passages)]
    assert [(h.message_id, h.passage) for h in got.passages] == [k for k, _ in best]


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
        query="Researching adoption agencies",
        observer="caroline",
        observed="caroline",
        messages=0,
        observations=3,
    )
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


async def test_a_diverse_slice_rests_on_more_messages(derived: World) -> None:
    async def sources(question: str, diverse: bool) -> list[str]:
        query = RetrievalQuery(
            query=question,
            observer="caroline",
            observed="caroline",
            messages=0,
            observations=6,
            diverse=diverse,
        )
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


def naming(hits: Sequence[PassageHit], messages: int) -> list[PassageHit]:
    """The first of ``hits`` (best first) up to the one naming the ``messages``-th message: what
    a passage list keeps, told plainly."""
    seen: set[str] = set()
    out: list[PassageHit] = []
    for h in hits:
        if h.message_id not in seen:
            if len(seen) == messages:
                break
            seen.add(h.message_id)
        out.append(h)
    return out


async def test_a_passage_list_stops_before_the_message_past_its_count(documents: World) -> None:
    # Three long messages restating one plan (many passages alike, many scores equal) and three
    # short turns: a list cut at n messages is the full list up to the (n + 1)-th message's
    # first passage, and equal scores keep one order (by message, then passage).
    reads = PostgresEvidence(documents.pool)
    question = "What is the plan for the garden this year?"
    vector = await documents.memory.embedder.embed_query(question)
    model = documents.memory.embedder.model_name

    async def both(ask: PassageAsk) -> list[list[PassageHit]]:
        lexical = await reads.lexical(documents.ws, question, ListsAsk(ask))
        dense = await reads.dense(documents.ws, vector, model, ListsAsk(ask))
        return [lexical.passages, dense.passages]

    full = await both(PassageAsk(None, None, OPEN, 300, 300))
    # BM25 finds the long messages only (the short turns share no word with the question).
    assert [len({h.message_id for h in hits}) for hits in full] == [3, 6]
    for hits in full:
        assert hits == sorted(hits, key=lambda h: (-h.score, h.message_id, h.passage))
    for n in (1, 2, 3, 5):
        cut = await both(PassageAsk(None, None, OPEN, 300, n))
        assert cut == [naming(hits, n) for hits in full]


async def test_a_passage_list_of_one_sender_of_several_or_of_all_is_the_nearest_of_theirs(
    crowd: World,
) -> None:
    # One sender's list, several senders' and everybody's, each from the graph or the B-tree as
    # planned for its values: the exact ranking of those senders' passages in this workspace
    # (the same arithmetic, without the index).
    reads = PostgresEvidence(crowd.pool)
    model = crowd.memory.embedder.model_name
    some = [f"peer-{n:02d}" for n in range(0, CROWD, 5)]
    for question in ("What did Melanie paint?", "Where does Caroline live now?"):
        vector = await crowd.memory.embedder.embed_query(question)
        for senders in (None, ["peer-03"], some, ["nobody"]):
            got = await reads.dense(
                crowd.ws, vector, model, ListsAsk(PassageAsk(senders, None, OPEN, 20, 20))
            )
            async with crowd.pool.connection() as conn, conn.transaction():
                await conn.execute("SET LOCAL enable_indexscan = off")
                cur = await conn.execute(
                    "SELECT message_id, passage FROM message_passages WHERE workspace = %s"
                    " AND (%s::text[] IS NULL OR peer_id = ANY(%s::text[]))"
                    " ORDER BY embedding <#> %s::halfvec, message_id, passage LIMIT 20",
                    (crowd.ws, senders, senders, vector_literal(vector)),
                )
                exact = [(r["message_id"], r["passage"]) for r in await cur.fetchall()]
            assert [(h.message_id, h.passage) for h in got.passages] == exact, senders
            assert bool(exact) == (senders != ["nobody"])


SHAPES: dict[str, dict[str, object]] = {
    "slice": {
        "observer": "caroline",
        "observed": "caroline",
        "messages": 0,
        "observations": 3,
        "diverse": True,
    },
    "prefetch": {
        "observer": "caroline",
        "observed": "caroline",
        "messages": 0,
        "observations": 2,
        "max_distance": 0.9,
    },
    "mixed": {"observer": "melanie", "observed": "melanie", "messages": 2, "observations": 2},
    "workspace": {"messages": 3, "observations": 2},
    "confined": {
        "observer": "caroline",
        "observed": "caroline",
        "sessions": ["s1", "s3"],
        "messages": 2,
        "observations": 3,
    },
    "explicit": {
        "observer": "caroline",
        "observed": "caroline",
        "messages": 0,
        "observations": 2,
        "levels": ["explicit"],
    },
}


async def test_vectors_searched_in_the_database_or_through_the_index_find_the_same(
    derived: World,
) -> None:
    # Observation vectors in the engine's own database are searched inside its statements;
    # elsewhere (a Qdrant server) through the vector index, their rows read after. Both give
    # the same candidates in the same order, the same rows and the same citations. Short lists
    # (depth 5), so that every list stops short of what the representations hold.
    shallow = EngineConfig(depth=5)
    index = derived.memory.index
    assert isinstance(index, PgVectorIndex)
    inside = RetrievalEngine(PostgresEvidence(derived.pool, index), derived.memory, config=shallow)
    outside = RetrievalEngine(PostgresEvidence(derived.pool), derived.memory, config=shallow)
    conv = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")
    questions = [q["question"] for q in conv["qa"]][:15]
    listed = 0
    for question in questions:
        for shape, fields in SHAPES.items():
            query = RetrievalQuery(query=question, **fields)
            a = await inside.gather(derived.ws, query)
            b = await outside.gather(derived.ws, query)
            assert a.found == b.found, (shape, question)
            listed += bool(a.found.observations.get("dense"))
    assert listed > len(questions) * len(SHAPES) // 2  # the vector lists took part
