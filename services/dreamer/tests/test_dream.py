"""A dream's edits: knowledge updates, contradictions, pruning, patterns and the card."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from mnemo_runtime.models import ToolResultBlock, Usage
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply
from mnemo_schema.config import WorkspaceConfiguration
from mnemo_schema.dreams import DreamCompleted, DreamDue
from mnemo_schema.observations import ObservationDeleted, ObservationWritten, PeerCardUpdated

DUE = DreamDue(
    workspace="ws",
    observer="alice",
    observed="alice",
    reason="requested",
    due_at=datetime(2024, 1, 1, tzinfo=UTC),
)


def errors(model: ScriptedModel) -> list[str]:
    """The tool errors the model was shown."""
    return [
        b.content
        for m in model.requests[-1].messages
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.is_error
    ]


async def test_knowledge_update_writes_the_new_value_and_deletes_the_old(world) -> None:
    world.memory.add("o1", "Alice lives in Boston", day=0)
    world.memory.add("o2", "Alice moved to Denver", day=30)
    model = ScriptedModel(
        tool_reply("recent_observations", {"limit": 20}),
        tool_reply(
            "update_knowledge",
            {
                "content": "Alice now lives in Denver",
                "premise_ids": ["o2", "o1"],
                "superseded_ids": ["o1"],
                "reason": "moved to Denver",
            },
        ),
        text_reply("done"),
    )
    done = await world.dreamer(model=model).dream(DUE)
    result = model.requests[1].messages[-1].content[0]
    assert isinstance(result, ToolResultBlock)
    assert "[o1] (explicit, 2024-01-01) Alice lives in Boston" in result.content
    [new] = [e for e in world.log.of(ObservationWritten) if e.level == "deductive"]
    assert new.premise_ids == ["o2", "o1"] and new.origin == "dreamer"
    [gone] = world.log.of(ObservationDeleted)
    assert gone.observation_id == "o1" and gone.reason == "moved to Denver"
    assert [o.id for o in world.memory.live()] == [new.observation_id, "o2"]
    assert done is not None and (done.deductive_written, done.deleted) == (1, 1)


async def test_contradiction_cites_both_sides(world) -> None:
    world.memory.add("o1", "Alice is vegetarian")
    world.memory.add("o2", "Alice is not vegetarian")
    model = ScriptedModel(
        tool_reply(
            "record_contradiction",
            {
                "content": "Alice said both that she is and is not vegetarian",
                "observation_ids": ["o1", "o2"],
            },
        ),
        text_reply("done"),
    )
    done = await world.dreamer(model=model).dream(DUE)
    [c] = world.log.of(ObservationWritten)
    assert (c.level, c.premise_ids) == ("contradiction", ["o1", "o2"])
    assert done is not None and done.contradictions_written == 1


async def test_store_rejection_comes_back_as_a_tool_error(world) -> None:
    world.memory.add("o1", "Alice works as a nurse")
    model = ScriptedModel(
        tool_reply(
            "write_deduction", {"content": "Alice has medical training", "premise_ids": ["nope"]}
        ),
        tool_reply(
            "write_deduction", {"content": "Alice has medical training", "premise_ids": ["o1"]}
        ),
        text_reply("done"),
    )
    done = await world.dreamer(model=model).dream(DUE)
    assert "do not exist" in errors(model)[0]
    [w] = world.log.of(ObservationWritten)
    assert w.premise_ids == ["o1"]
    assert done is not None and (done.rejected, done.deductive_written) == (1, 1)


async def test_prune_removes_derived_beliefs_but_not_facts(world) -> None:
    world.memory.add("o1", "Alice works as a nurse")
    world.memory.add("d1", "Alice works nights", level="deductive", premises=["gone"], review=True)
    model = ScriptedModel(
        tool_reply("prune", {"observation_id": "o1", "reason": "stale"}),
        tool_reply("prune", {"observation_id": "d1", "reason": "its premise was deleted"}),
        text_reply("done"),
    )
    await world.dreamer(model=model).dream(DUE)
    assert "use update_knowledge" in errors(model)[0]
    assert [e.observation_id for e in world.log.of(ObservationDeleted)] == ["d1"]


async def test_induction_refuses_one_source_and_grades_confidence(world) -> None:
    for i in range(1, 7):
        world.memory.add(f"o{i}", f"Alice went hiking on trail {i}")
    induction = ScriptedModel(
        tool_reply(
            "write_pattern",
            {"content": "Alice hikes", "pattern_type": "behaviour", "premise_ids": ["o1"]},
        ),
        tool_reply(
            "write_pattern",
            {"content": "Alice hikes", "pattern_type": "behaviour", "premise_ids": ["o1", "o1"]},
        ),
        tool_reply(
            "write_pattern",
            {
                "content": "Alice hikes often",
                "pattern_type": "behaviour",
                "premise_ids": ["o1", "o2"],
            },
        ),
        tool_reply(
            "write_pattern",
            {
                "content": "Alice hikes a lot",
                "pattern_type": "tendency",
                "premise_ids": ["o1", "o2", "o3"],
            },
        ),
        tool_reply(
            "write_pattern",
            {
                "content": "Alice loves trails",
                "pattern_type": "preference",
                "premise_ids": [f"o{i}" for i in range(1, 7)],
            },
        ),
        tool_reply(
            "write_pattern",
            {"content": "Alice is odd", "pattern_type": "mood", "premise_ids": ["o1", "o2"]},
        ),
        text_reply("done"),
    )
    done = await world.dreamer(induction=induction).dream(DUE)
    errs = errors(induction)
    assert len(errs) == 3 and "at least 2" in errs[0] and "at least 2" in errs[1]
    written = world.log.of(ObservationWritten)
    assert [(e.level, e.confidence) for e in written] == [
        ("inductive", 0.4),
        ("inductive", 0.6),
        ("inductive", 0.8),
    ]
    assert done is not None and done.inductive_written == 3


async def test_induction_cannot_delete(world) -> None:
    world.memory.add("o1", "Alice works as a nurse")
    induction = ScriptedModel(
        tool_reply("prune", {"observation_id": "o1", "reason": "x"}),
        tool_reply(
            "update_knowledge", {"content": "x", "premise_ids": ["o1"], "superseded_ids": ["o1"]}
        ),
        text_reply("done"),
    )
    await world.dreamer(induction=induction).dream(DUE)
    assert all("no tool" in e for e in errors(induction))
    assert world.log.of(ObservationDeleted) == []
    assert {t.name for t in induction.requests[0].tools} == {
        "recent_observations",
        "search_observations",
        "read_sources",
        "write_pattern",
    }


async def test_card_stays_within_bounds_and_kinds(world) -> None:
    too_many = [{"kind": "attribute", "text": f"Fact {i}"} for i in range(41)]
    model = ScriptedModel(
        tool_reply("set_peer_card", {"entries": too_many}),
        tool_reply("set_peer_card", {"entries": [{"kind": "mood", "text": "Alice is tired"}]}),
        tool_reply("set_peer_card", {"entries": [{"kind": "identity", "text": "x" * 501}]}),
        tool_reply(
            "set_peer_card",
            {
                "entries": [
                    {"kind": "identity", "text": "Name: Alice"},
                    {"kind": "attribute", "text": "Lives in: Denver"},
                    {"kind": "relationship", "text": "Sister: Anna"},
                    {"kind": "instruction", "text": "Call her Ali"},
                ]
            },
        ),
        text_reply("done"),
    )
    done = await world.dreamer(model=model).dream(DUE)
    errs = errors(model)
    assert "at most 40" in errs[0] and "not one of" in errs[1] and "1..500" in errs[2]
    [card] = world.log.of(PeerCardUpdated)
    assert card.card == ["Name: Alice", "Lives in: Denver", "Sister: Anna", "Call her Ali"]
    assert card.origin == "dreamer" and done is not None and done.card_updated


async def test_retried_dream_is_not_doubled(world) -> None:
    world.memory.add("o1", "Alice lives in Boston", day=0)
    world.memory.add("o2", "Alice moved to Denver", day=30)

    def script() -> ScriptedModel:
        return ScriptedModel(
            tool_reply(
                "write_deduction", {"content": "Alice lives in Colorado", "premise_ids": ["o2"]}
            ),
            RuntimeError("crash mid-dream"),
        )

    with contextlib.suppress(RuntimeError):
        await world.dreamer(model=script()).dream(DUE)
    assert world.log.of(DreamCompleted) == [] and len(world.log.of(ObservationWritten)) == 1
    assert world.schedule.held == set(), "the lock is released when a dream fails"
    retry = ScriptedModel(
        tool_reply(
            "write_deduction", {"content": "Alice lives in Colorado", "premise_ids": ["o2"]}
        ),
        text_reply("done"),
    )
    await world.dreamer(model=retry).dream(DUE)
    assert len(world.log.of(ObservationWritten)) == 1, "the same edit has the same ids"
    assert len(world.log.of(DreamCompleted)) == 1


async def test_budget_bounds_the_loop_and_costs_are_reported(world) -> None:
    world.memory.add("o1", "Alice lives in Boston")
    looping = ScriptedModel(
        otherwise=lambda r: tool_reply("recent_observations", {"limit": 5}).model_copy(
            update={"usage": Usage(input_tokens=100, output_tokens=10)}
        )
    )
    world.settings.deduction_max_calls = 4
    done = await world.dreamer(model=looping).dream(DUE)
    assert len(looping.requests) == 4
    assert done is not None and (done.model_calls, done.input_tokens, done.output_tokens) == (
        5,
        400,
        40,
    )


async def test_a_dream_honours_the_applications_configuration(world) -> None:
    world.memory.add("o1", "Alice lives in Boston")
    plain = ScriptedModel(otherwise=lambda _r: text_reply("done"))
    await world.dreamer(model=plain).dream(DUE)
    assert any(t.name == "set_peer_card" for t in plain.requests[0].tools)
    assert "<instructions>" not in plain.requests[0].system
    told = WorkspaceConfiguration.model_validate(
        {
            "custom_instructions": "Keep names.",
            "dream": {"custom_instructions": "Be careful."},
            "peer_card": {"create": False},
        }
    )
    world.memory.configs[("ws", None)] = told
    deduction, induction = (
        ScriptedModel(otherwise=lambda _r: text_reply("done")),
        ScriptedModel(otherwise=lambda _r: text_reply("done")),
    )
    await world.dreamer(model=deduction, induction=induction).dream(DUE)
    for model in (deduction, induction):
        system = model.requests[0].system
        assert "Keep names.\n\nBe careful." in system
        assert all(t.name != "set_peer_card" for t in model.requests[0].tools)
    # Dreams switched off (or reasoning, which dreams need): the dream completes unmade.
    for off in ({"dream": {"enabled": False}}, {"reasoning": {"enabled": False}}):
        world.memory.configs[("ws", None)] = WorkspaceConfiguration.model_validate(off)
        silent = ScriptedModel()  # a call would fail: none is scripted
        done = await world.dreamer(model=silent, induction=silent).dream(DUE)
        assert silent.requests == [] and done is not None and done.model_calls == 0
