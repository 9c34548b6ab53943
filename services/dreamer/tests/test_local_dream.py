"""A whole dream with the local heuristic reasoner, and what dreams cost as a representation grows."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from mnemo_dreamer.app import local_dreamer
from mnemo_runtime.models import ModelRequest, ModelResponse, Stage, Usage
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply
from mnemo_runtime.precedence import precedence
from mnemo_schema.dreams import DreamCompleted, DreamDue
from mnemo_schema.observations import ObservationWritten

DUE = DreamDue(
    workspace="ws",
    observer="alice",
    observed="alice",
    reason="threshold",
    due_at=datetime(2024, 1, 1, tzinfo=UTC),
)
TOPICS = ["climbing", "violin", "gardening", "chess", "baking", "sailing", "poetry", "running"]


async def test_local_dream_revises_generalises_and_sets_the_card(world) -> None:
    world.memory.add("o1", "Alice lives in Boston", day=0)
    world.memory.add("o2", "Alice went climbing with friends", day=1)
    world.memory.add("o3", "Alice moved to Denver", day=30)
    world.memory.add("o4", "Alice loves climbing in the mountains", day=31)
    local = local_dreamer(Stage.DREAMER_DEDUCTION)
    done = await world.dreamer(model=local, induction=local).dream(DUE)
    assert "o1" in world.memory.deleted
    written = world.log.of(ObservationWritten)
    [update] = [e for e in written if e.level == "deductive"]
    assert update.premise_ids == ["o3", "o1"] and "Denver" in update.content
    [pattern] = [e for e in written if e.level == "inductive"]
    assert pattern.premise_ids == ["o4", "o2"] and pattern.confidence == 0.4
    [card] = world.memory.cards.values()
    assert sorted(card) == ["Lives in: Denver"]
    assert done is not None and done.model == "local-heuristic"
    assert (done.deductive_written, done.deleted, done.inductive_written, done.card_updated) == (
        1,
        1,
        1,
        True,
    )
    assert done.model_calls == 6, "three turns per specialist: survey, act, stop"


def _charging(step: ModelResponse):
    """A scripted turn charged like a provider: a token per four characters of the request."""

    def respond(r: ModelRequest) -> ModelResponse:
        size = len(r.system) + sum(len(m.model_dump_json()) for m in r.messages)
        return step.model_copy(update={"usage": Usage(input_tokens=size // 4, output_tokens=40)})

    return respond


@pytest.mark.parametrize("size", [10, 100, 1000])
async def test_dream_cost_by_representation_size(world, size: int) -> None:
    for i in range(size):
        world.memory.add(f"o{i}", f"Alice mentioned {TOPICS[i % len(TOPICS)]} on day {i}", day=i)
    scripted_deduction = ScriptedModel(
        _charging(tool_reply("recent_observations", {"limit": 200})),
        _charging(tool_reply("search_observations", {"query": "climbing", "limit": 10})),
        _charging(
            tool_reply(
                "write_deduction",
                {"content": "Alice has many hobbies", "premise_ids": ["o0", "o1"]},
            )
        ),
        _charging(text_reply("done")),
    )
    scripted_induction = ScriptedModel(
        _charging(tool_reply("recent_observations", {"limit": 200})),
        _charging(
            tool_reply(
                "write_pattern",
                {
                    "content": "Alice returns to chess",
                    "pattern_type": "tendency",
                    "premise_ids": ["o3", "o7"],
                },
            )
        ),
        _charging(text_reply("done")),
    )
    scripted = await world.dreamer(model=scripted_deduction, induction=scripted_induction).dream(
        DUE
    )
    local = local_dreamer(Stage.DREAMER_DEDUCTION)
    heuristic = await world.dreamer(model=local, induction=local).dream(
        DUE.model_copy(update={"event_id": f"local-{size}"})
    )
    assert scripted is not None and heuristic is not None
    print(
        f"\nDREAM COST size={size} scripted: calls={scripted.model_calls}"
        f" in={scripted.input_tokens} out={scripted.output_tokens}"
        f" | local-heuristic: calls={heuristic.model_calls} in={heuristic.input_tokens}"
        f" out={heuristic.output_tokens}"
    )
    assert scripted.model_calls == 7 and heuristic.model_calls in (5, 6)
    assert len(world.log.of(DreamCompleted)) == 2


async def test_a_dream_waits_between_its_turns_while_a_read_is_answered(world) -> None:
    world.memory.add("o1", "Alice lives in Boston", day=0)
    world.memory.add("o3", "Alice moved to Denver", day=30)
    local = local_dreamer(Stage.DREAMER_DEDUCTION)
    order = precedence()
    with order.answering():
        dream = asyncio.ensure_future(world.dreamer(model=local, induction=local).dream(DUE))
        await asyncio.sleep(0.1)
        assert not dream.done() and not world.log.of(ObservationWritten)
    done = await asyncio.wait_for(dream, timeout=10.0)
    assert done is not None and done.deductive_written == 1
