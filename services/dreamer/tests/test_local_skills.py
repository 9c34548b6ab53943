"""The local reasoner's dreamer skills, driven through the tool-loop turns they answer."""

from __future__ import annotations

from mnemo_dreamer.app import local_dreamer
from mnemo_dreamer.local import well_formed
from mnemo_runtime.models import Message, ModelRequest, Stage, ToolResultBlock, ToolUseBlock

OPENING = "<representation observer='alice' observed='alice' />\n<peer>Alice</peer>\n<card>\n(empty)\n</card>\n"


def after_listing(stage: Stage, lines: list[str], card: str = "(empty)") -> ModelRequest:
    return ModelRequest(
        stage=stage,
        messages=(
            Message.user(OPENING.replace("(empty)", card)),
            Message.assistant(ToolUseBlock(id="c1", name="recent_observations", input={})),
            Message.user(ToolResultBlock(tool_use_id="c1", content="\n".join(lines))),
        ),
    )


async def test_deduction_first_surveys_the_representation() -> None:
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(
        ModelRequest(stage=Stage.DREAMER_DEDUCTION, messages=(Message.user(OPENING),))
    )
    assert [c.name for c in r.tool_calls] == ["recent_observations"]
    assert r.model == "local-heuristic"


async def test_newer_value_supersedes_the_older() -> None:
    lines = [
        "[o3] (explicit, 2024-03-01) Alice moved to Denver in the week of 1 March 2024",
        "[o2] (explicit, 2024-02-01) Alice works as a nurse",
        "[o1] (explicit, 2024-01-01) Alice lives in Boston",
    ]
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(
        after_listing(Stage.DREAMER_DEDUCTION, lines)
    )
    calls = {c.name: c.input for c in r.tool_calls}
    update = calls["update_knowledge"]
    assert update["superseded_ids"] == ["o1"] and update["premise_ids"] == ["o3", "o1"]
    assert update["content"] == "Alice now lives in Denver, no longer in Boston"
    card = [e["text"] for e in calls["set_peer_card"]["entries"]]
    assert sorted(card) == ["Lives in: Denver", "Name: Alice", "Occupation: nurse"]
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0


async def test_same_value_is_not_an_update() -> None:
    lines = [
        "[o2] (explicit, 2024-02-01) Alice lives in Boston",
        "[o1] (explicit, 2024-01-01) Alice moved to Boston",
    ]
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(
        after_listing(Stage.DREAMER_DEDUCTION, lines, "Name: Alice\nLives in: Boston")
    )
    assert r.tool_calls == () and r.stop_reason == "end_turn"


async def test_negation_is_a_contradiction_and_lost_support_is_pruned() -> None:
    lines = [
        "[o2] (explicit, 2024-02-01) Alice does not eat meat",
        "[o1] (explicit, 2024-01-01) Alice eats meat",
        "[d1] (deductive, 2024-01-02) Alice cooks for others [cites: gone] [needs review]",
        "[d2] (deductive, 2024-01-02) Alice is busy [cites: o1] [needs review]",
    ]
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(
        after_listing(Stage.DREAMER_DEDUCTION, lines)
    )
    calls = [(c.name, c.input) for c in r.tool_calls]
    assert (calls[0][0], calls[0][1]["observation_ids"][0]) == ("record_contradiction", "o1")
    assert calls[0][1]["observation_ids"] == ["o1", "o2"]
    assert [i["observation_id"] for n, i in calls if n == "prune"] == ["d1"]


async def test_card_keeps_relationships_and_instructions() -> None:
    lines = [
        "[o2] (explicit, 2024-02-01) Alice's sister is named Anna",
        "[o1] (explicit, 2024-01-01) Alice wants to be called Ali",
    ]
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(
        after_listing(Stage.DREAMER_DEDUCTION, lines)
    )
    [card] = [c.input["entries"] for c in r.tool_calls if c.name == "set_peer_card"]
    assert {(e["kind"], e["text"]) for e in card} == {
        ("identity", "Name: Alice"),
        ("relationship", "Sister: Anna"),
        ("instruction", "Instruction: call them Ali"),
    }


async def test_induction_needs_two_sources_sharing_a_term() -> None:
    lines = [
        "[o3] (explicit, 2024-03-01) Alice went climbing at the gym",
        "[o2] (explicit, 2024-02-01) Alice loves climbing outdoors",
        "[o1] (explicit, 2024-01-01) Alice bought a violin",
    ]
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(
        after_listing(Stage.DREAMER_INDUCTION, lines)
    )
    [call] = r.tool_calls
    assert call.name == "write_pattern"
    assert call.input["premise_ids"] == ["o3", "o2"] and call.input["pattern_type"] == "preference"
    assert "climbing" in call.input["content"]


async def test_induction_skips_a_recorded_pattern_and_stops_after_acting() -> None:
    lines = [
        "[i1] (inductive, 2024-03-02) Alice keeps coming back to climbing [cites: o3, o2]",
        "[o3] (explicit, 2024-03-01) Alice went climbing at the gym",
        "[o2] (explicit, 2024-02-01) Alice loves climbing outdoors",
    ]
    request = after_listing(Stage.DREAMER_INDUCTION, lines)
    r = await local_dreamer(Stage.DREAMER_DEDUCTION).complete(request)
    assert r.tool_calls == ()
    acted = request.model_copy(
        update={
            "messages": (
                *request.messages,
                Message.assistant(ToolUseBlock(id="c2", name="write_pattern", input={})),
            )
        }
    )
    assert (await local_dreamer(Stage.DREAMER_DEDUCTION).complete(acted)).stop_reason == "end_turn"


async def test_every_sentence_a_dream_writes_is_a_plain_proposition_about_the_peer() -> None:
    # The observations behind "alice keeps coming back to night" and "Alice now: lives in
    # Denver now (previously Boston, Denver)".
    lines = [
        "[o1] (explicit, 2024-01-01) Alice lives in Boston",
        "[o2] (explicit, 2024-02-01) Alice lives in Denver now",
        "[o3] (explicit, 2024-03-01) Alice moved to Denver",
        "[o4] (explicit, 2024-03-02) Alice works the night shift",
        "[o5] (explicit, 2024-03-03) Alice sleeps badly at night",
        "[o6] (explicit, 2024-03-04) Alice went hiking with her sister",
        "[o7] (explicit, 2024-03-05) Alice loves hiking in the hills",
    ]
    opening = OPENING.replace("<peer>Alice</peer>", "<peer>alice</peer>")
    written = []
    for stage in (Stage.DREAMER_DEDUCTION, Stage.DREAMER_INDUCTION):
        request = after_listing(stage, lines)
        request = request.model_copy(
            update={"messages": (Message.user(opening), *request.messages[1:])}
        )
        r = await local_dreamer(stage).complete(request)
        written += [c.input["content"] for c in r.tool_calls if "content" in c.input]
    assert "Alice now lives in Denver, no longer in Boston" in written
    assert "Alice enjoys hiking" in written
    assert not any("night" in w for w in written)
    assert all(well_formed(w, "Alice") for w in written if not w.startswith("Conflicting"))
