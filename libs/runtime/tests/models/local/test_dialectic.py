"""The local reasoner's dialectic skill: extractive, cited, abstaining, deterministic."""

from __future__ import annotations

from mnemo_runtime.models import Message, ModelRequest, Stage, ToolSpec
from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.models.local.dialectic import Seen, compose

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
        response = await LocalReasoner().complete(request(OBS, stage))
        (call,) = response.tool_calls
        assert call.name == "answer" and response.model == "local-heuristic"
        assert call.input["cited_observation_ids"] == ["o2", "o1"]
        assert call.input["content"].startswith("Most recently (2023-06-01): Caroline moved")


async def test_without_an_answer_tool_it_answers_in_text() -> None:
    plain = ModelRequest(stage=Stage.DIALECTIC_LOW, messages=(Message.user(OBS),))
    response = await LocalReasoner().complete(plain)
    assert not response.tool_calls and "Denver" in response.text


def test_it_picks_the_observations_sharing_the_question_words() -> None:
    obs = [Seen("a", "explicit", "2023-01-01", "Caroline likes painting sunsets"),
           Seen("b", "explicit", "2023-01-02", "Caroline has two dogs")]  # fmt: skip
    assert compose("What does Caroline like painting?", obs, "caroline") == (
        "Caroline likes painting sunsets.",
        ["a"],
    )


def test_it_abstains_when_nothing_overlaps() -> None:
    obs = [Seen("a", "explicit", "2023-01-01", "Caroline has two dogs")]
    content, cited = compose("Which car does Caroline drive?", obs, "caroline")
    assert content.startswith("I don't know") and cited == []


def test_a_contradiction_flag_makes_a_conflict_report() -> None:
    obs = [Seen("x", "explicit", "2023-01-01", "Caroline hates coffee"),
           Seen("y", "explicit", "2023-02-01", "Caroline loves coffee"),
           Seen("c", "contradiction", "2023-02-02", "Caroline's statements on coffee conflict")]  # fmt: skip
    content, cited = compose("Does Caroline drink coffee?", obs, "caroline")
    assert content.startswith("The record conflicts") and set(cited) == {"c", "x", "y"}


def test_it_is_deterministic() -> None:
    assert len({str(LocalReasoner()._respond(request(OBS))) for _ in range(5)}) == 1
