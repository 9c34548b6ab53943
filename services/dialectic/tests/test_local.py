"""The local reasoner's dialectic skill: extractive, cited, abstaining, deterministic."""

from __future__ import annotations

import json

from mnemo_dialectic.app import local_dialectic
from mnemo_dialectic.domain import Line, first_turn
from mnemo_dialectic.local import compose
from mnemo_runtime.models import (
    Message,
    ModelRequest,
    Stage,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from mnemo_schema.answer_format import answer_problem

ANSWER = ToolSpec(name="answer", description="final answer", input_schema={"type": "object"})
OBS = """<question>Where does Caroline live now?</question>
<peer>caroline</peer>
<observations>
[o1] (explicit, 2023-01-02) Caroline lives in Boston
[o2] (explicit, 2023-06-01) Caroline moved to Denver and lives there now
[o3] (explicit, 2023-03-01) Caroline likes painting
</observations>"""


def request(text: str, stage: Stage = Stage.DIALECTIC_LOW) -> ModelRequest:
    return ModelRequest(stage=stage, messages=(Message.user(text),), tools=(ANSWER,))


async def test_every_dialectic_stage_answers_through_the_answer_tool() -> None:
    for stage in (Stage.DIALECTIC_MINIMAL, Stage.DIALECTIC_MEDIUM, Stage.DIALECTIC_MAX):
        response = await local_dialectic(stage).complete(request(OBS, stage))
        (call,) = response.tool_calls
        assert call.name == "answer" and response.model == "local-heuristic"
        assert call.input["cited_observation_ids"] == ["o2", "o1"]
        assert call.input["content"].startswith("Most recently (2023-06-01): Caroline moved")


async def test_without_an_answer_tool_it_answers_in_text() -> None:
    plain = ModelRequest(stage=Stage.DIALECTIC_LOW, messages=(Message.user(OBS),))
    response = await local_dialectic(Stage.DIALECTIC_LOW).complete(plain)
    assert not response.tool_calls and "Denver" in response.text


def test_it_picks_the_observations_sharing_the_question_words() -> None:
    obs = [
        Line("a", "explicit", "2023-01-01", "Caroline likes painting sunsets"),
        Line("b", "explicit", "2023-01-02", "Caroline has two dogs"),
    ]
    answer = compose("What does Caroline like painting?", obs, "caroline")
    assert (answer.content, answer.observation_ids) == ("Caroline likes painting sunsets.", ["a"])


def test_it_abstains_when_nothing_overlaps() -> None:
    obs = [Line("a", "explicit", "2023-01-01", "Caroline has two dogs")]
    answer = compose("Which car does Caroline drive?", obs, "caroline")
    assert answer.content.startswith("I don't know") and not answer.found


def test_a_contradiction_flag_makes_a_conflict_report() -> None:
    obs = [
        Line("x", "explicit", "2023-01-01", "Caroline hates coffee"),
        Line("y", "explicit", "2023-02-01", "Caroline loves coffee"),
        Line("c", "contradiction", "2023-02-02", "Caroline's statements on coffee conflict"),
    ]
    answer = compose("Does Caroline drink coffee?", obs, "caroline")
    assert answer.content.startswith("The record conflicts")
    assert set(answer.observation_ids) == {"c", "x", "y"}


def test_it_is_deterministic() -> None:
    assert (
        len({str(local_dialectic(Stage.DIALECTIC_LOW)._respond(request(OBS))) for _ in range(5)})
        == 1
    )


def test_a_paraphrase_is_answered_from_an_observation_close_in_meaning() -> None:
    # "job" shares no word with "works as a nurse"; the engine's vectors put it close.
    obs = [
        Line(
            "n", "explicit", "2023-01-01", "Alice works as a nurse at the children's hospital", 0.62
        ),
        Line("p", "explicit", "2023-01-02", "Alice likes pizza", 0.21),
    ]
    answer = compose("What is Alice's job?", obs, "alice")
    assert answer.observation_ids == ["n"] and "nurse" in answer.content
    # Far in meaning and no shared word: still "I don't know".
    far = [Line("p", "explicit", "2023-01-02", "Alice likes pizza", 0.21)]
    assert not compose("What is Alice's job?", far, "alice").found


async def test_with_nothing_relevant_it_searches_the_messages_once_then_answers() -> None:
    search = ToolSpec(name="search_messages", description="s", input_schema={"type": "object"})
    first = ModelRequest(
        stage=Stage.DIALECTIC_LOW,
        messages=(
            Message.user("<question>Which car does Bob drive?</question>\n<peer>bob</peer>"),
        ),
        tools=(ANSWER, search),
    )
    model = local_dialectic(Stage.DIALECTIC_LOW)
    (call,) = (await model.complete(first)).tool_calls
    assert call.name == "search_messages"
    found = "{m1} (s1, bob, 2023-05-01 10:00) I drive an old red Volvo car."
    second = first.model_copy(
        update={
            "messages": (
                *first.messages,
                Message.assistant(ToolUseBlock(id=call.id, name=call.name, input=call.input)),
                Message.user(ToolResultBlock(tool_use_id=call.id, content=found)),
            )
        }
    )
    (answer,) = (await model.complete(second)).tool_calls
    assert answer.name == "answer" and answer.input["cited_message_ids"] == ["m1"]
    assert "Volvo" in answer.input["content"]


async def test_a_response_format_is_filled_as_json_of_that_shape() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "known": {"type": "boolean"}},
        "required": ["city", "known"],
    }
    text = first_turn("Where does Caroline live now?", "caroline", [], schema)
    text = text.replace(
        "(no observations found)", OBS.split("<observations>\n")[1].split("\n</observations>")[0]
    )
    response = await local_dialectic(Stage.DIALECTIC_LOW).complete(request(text))
    content = response.tool_calls[0].input["content"]
    assert answer_problem(schema, content) is None
    assert json.loads(content)["known"] is True and "Denver" in json.loads(content)["city"]
