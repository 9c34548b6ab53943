"""The dialectic agent on a fake reader: scripted models for the loop, the local reasoner for answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemo_dialectic.adapters.fake import FakeReader, day
from mnemo_dialectic.agent import DialecticAgent
from mnemo_dialectic.app import local_dialectic
from mnemo_dialectic.domain import Msg, Obs
from mnemo_dialectic.handlers import ChatHandlers
from mnemo_dialectic.settings import DialecticSettings
from mnemo_runtime.models import ChatModel, ModelRequest, ModelResponse, Stage, ToolResultBlock
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply
from mnemo_schema.dialectic_queries import ChatQuery, ConclusionLevel, ReasoningLevel

WS = "w1"


def obs(i: str, content: str, when: str, level: ConclusionLevel = "explicit", **kw: Any) -> Obs:
    return Obs(
        id=i,
        level=level,
        content=content,
        created_at=day(when),
        observer="alice",
        observed="bob",
        session_id="s1",
        **kw,
    )


def agent(reader: FakeReader, model: ChatModel | None = None) -> DialecticAgent:
    models: Mapping[Stage, ChatModel] = {
        s: model or local_dialectic(s) for s in Stage if s.name.startswith("DIALECTIC")
    }
    return DialecticAgent(models, reader, DialecticSettings())


def ask(text: str, level: ReasoningLevel = "low", **kw: Any) -> ChatQuery:
    return ChatQuery(observer="alice", observed="bob", query=text, reasoning_level=level, **kw)


def tool_results(request: ModelRequest) -> list[ToolResultBlock]:
    return [b for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)]


async def test_a_changed_value_is_answered_with_the_most_recent_one(reader: FakeReader) -> None:
    reader.add_obs(WS, obs("o1", "Bob lives in Boston", "2023-01-02"))
    reader.add_obs(WS, obs("o2", "Bob moved to Denver and lives there now", "2023-06-01"))
    out = await agent(reader).answer(WS, ask("Where does Bob live now?"))
    assert out.content.startswith("Most recently (2023-06-01): Bob moved to Denver")
    assert "Boston" in out.content.split("Earlier:")[1]
    assert out.citations.observation_ids == ["o2", "o1"]


async def test_conflicting_statements_are_presented_as_a_conflict(reader: FakeReader) -> None:
    reader.add_obs(WS, obs("o1", "Bob hates coffee", "2023-03-01"))
    reader.add_obs(WS, obs("o2", "Bob loves coffee", "2023-03-02"))
    reader.add_obs(
        WS,
        obs(
            "c1",
            "Bob said both that he hates and loves coffee",
            "2023-03-03",
            level="contradiction",
            premise_ids=("o1", "o2"),
        ),
    )
    out = await agent(reader).answer(WS, ask("Does Bob like coffee?"))
    assert out.content.startswith("The record conflicts")
    assert "hates coffee" in out.content and "loves coffee" in out.content
    assert set(out.citations.observation_ids) == {"c1", "o1", "o2"}


async def test_thin_evidence_abstains(reader: FakeReader) -> None:
    reader.add_obs(WS, obs("o1", "Bob plays chess on Sundays", "2023-03-01"))
    out = await agent(reader).answer(WS, ask("What car does Bob drive?", include_evidence=True))
    assert out.content.startswith("I don't know")
    assert out.citations.observation_ids == []
    assert out.reply(True).evidence is not None


async def test_a_derived_belief_is_verified_down_to_explicit_evidence(reader: FakeReader) -> None:
    m1 = reader.add_msg(
        Msg(
            "m1",
            "s1",
            "bob",
            "I just started as a nurse at the city hospital.",
            day("2023-05-01"),
            1,
        ),
        ("alice", "bob"),
    )
    reader.add_obs(WS, obs("e1", "Bob works as a nurse", "2023-05-01", source_message_ids=("m1",)))
    reader.add_obs(
        WS,
        obs("d1", "Bob works in healthcare", "2023-05-02", level="deductive", premise_ids=("e1",)),
    )
    model = ScriptedModel(
        tool_reply("provenance", {"observation_id": "d1"}),
        tool_reply(
            "answer",
            {
                "content": "Bob works in healthcare: he is a nurse.",
                "cited_observation_ids": ["e1", "d1", "never-read"],
                "cited_message_ids": ["m1"],
            },
        ),
    )
    out = await agent(reader, model).answer(WS, ask("Does Bob work in healthcare?"))
    shown = tool_results(model.requests[1])[0].content
    assert "[e1] (explicit, 2023-05-01) Bob works as a nurse" in shown
    assert m1.content in shown
    assert out.citations.observation_ids == ["e1", "d1"]  # an id it never read is not vouched for
    assert out.citations.message_ids == ["m1"]
    evidence = out.reply(True).evidence
    assert evidence is not None
    assert {c.id for c in evidence.conclusions} >= {"d1", "e1"}
    assert [m.id for m in evidence.messages] == ["m1"]
    assert [t.tool_name for t in evidence.tool_calls] == ["provenance"]


async def test_a_loop_that_hits_its_budget_answers_with_what_it_has(reader: FakeReader) -> None:
    reader.add_obs(WS, obs("o1", "Bob plays chess", "2023-03-01"))

    def keeps_searching(request: ModelRequest) -> ModelResponse:
        if request.tool_choice.mode == "tool":
            return tool_reply(
                "answer", {"content": "Bob plays chess.", "cited_observation_ids": ["o1"]}
            )
        return tool_reply("search_observations", {"query": "chess games"})

    model = ScriptedModel(otherwise=keeps_searching)
    out = await agent(reader, model).answer(WS, ask("What games does Bob play?", level="low"))
    assert out.budget_exhausted and out.turns == 4
    assert [r.tool_choice.mode for r in model.requests] == ["auto", "auto", "auto", "tool"]
    assert "budget of 3 tool turns" in out.content
    assert out.citations.observation_ids == ["o1"]
    assert len(out.reads.tool_calls) == 3


async def test_the_model_cannot_read_outside_the_scope(reader: FakeReader) -> None:
    reader.add_msg(
        Msg("m1", "s1", "bob", "I work as a nurse.", day("2023-05-01"), 1), ("alice", "bob")
    )
    reader.add_msg(
        Msg("m2", "s2", "bob", "I am secretly learning to fly planes.", day("2023-05-02"), 2),
        ("carol", "bob"),
    )
    reader.obs[(WS, "carol", "bob")] = [
        Obs("x1", "explicit", "Bob is learning to fly planes", day("2023-05-02"), "carol", "bob")
    ]
    model = ScriptedModel(
        tool_reply("grep_messages", {"text": "planes", "observer": "carol"}),
        tool_reply("search_observations", {"query": "fly planes", "observed": "bob"}),
        tool_reply("messages_in_range", {"start": "2023-01-01", "end": "2023-12-31"}),
        tool_reply("provenance", {"observation_id": "x1"}),
        text_reply("Bob works as a nurse."),
    )
    out = await agent(reader, model).answer(WS, ask("Is Bob learning to fly?", level="high"))
    results = [b.content for b in tool_results(model.requests[-1])]
    assert not any("planes" in r for r in results)
    assert "I work as a nurse." in results[2]
    assert {(s.workspace, s.observer, s.observed) for s in reader.scopes_read} == {
        (WS, "alice", "bob")
    }
    evidence = out.reply(True).evidence
    assert evidence is not None
    assert [m.id for m in evidence.messages] == ["m1"] and evidence.conclusions == []
    # A failed call (x1 is not in alice's model of bob) is shown to the model, not counted.
    assert [t.tool_name for t in evidence.tool_calls] == [
        "grep_messages",
        "search_observations",
        "messages_in_range",
    ]


async def test_a_session_restricts_what_is_read(reader: FakeReader) -> None:
    for i, (session, text) in enumerate([("s1", "I like tea"), ("s2", "I like tea a lot")]):
        reader.add_msg(Msg(f"m{i}", session, "bob", text, day("2023-05-01"), i), ("alice", "bob"))
    model = ScriptedModel(tool_reply("grep_messages", {"text": "tea"}), text_reply("Tea."))
    out = await agent(reader, model).answer(WS, ask("Does Bob like tea?", session_id="s2"))
    assert list(out.reads.messages) == ["m1"]


async def test_streamed_chunks_add_up_to_the_answer_and_end_with_evidence(
    reader: FakeReader,
) -> None:
    reader.add_obs(WS, obs("o1", "Bob plays chess every Sunday with his father", "2023-03-01"))
    handlers = ChatHandlers(agent(reader))
    query = ask("Does Bob play chess?", include_evidence=True)
    chunks = [c async for c in handlers.stream(WS, query)]
    whole = await handlers.answer(WS, query)
    assert "".join(c.delta.content or "" for c in chunks[:-1]) == whole.content
    assert len(chunks) > 2 and not any(c.done for c in chunks[:-1])
    assert chunks[-1].done and chunks[-1].evidence == whole.evidence


async def test_search_messages_reads_the_scope_s_messages_and_counts_them_as_evidence(
    reader: FakeReader,
) -> None:
    reader.add_msg(
        Msg("m1", "s1", "bob", "My cello lessons start in May.", day("2023-04-01"), 1),
        ("alice", "bob"),
    )
    reader.add_msg(
        Msg("m2", "s2", "bob", "I take cello lessons in secret.", day("2023-04-02"), 2),
        ("carol", "bob"),
    )
    model = ScriptedModel(
        tool_reply("search_messages", {"query": "cello lessons", "top_k": 5}),
        text_reply("In May."),
    )
    out = await agent(reader, model).answer(WS, ask("When do Bob's cello lessons start?"))
    (result,) = [b.content for b in tool_results(model.requests[-1])]
    assert "start in May" in result and "secret" not in result
    assert list(out.reads.messages) == ["m1"]
    assert [name for name, _ in out.reads.tool_calls] == ["search_messages"]
