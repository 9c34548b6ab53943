import asyncio
import math

import pytest

from mnemo_bench.cases import Question
from mnemo_bench.judge import grade, judge_binary, nugget_score
from mnemo_bench.ordering import kendall_tau_b, ordering_score
from mnemo_runtime.models.scripted import ScriptedModel, tool_reply


def test_tau_b_with_ties() -> None:
    # C = 5, D = 0, one pair tied in y only: 5 / sqrt(5 * 6)
    assert math.isclose(kendall_tau_b([1, 2, 3, 4], [1, 1, 2, 3]), 5 / math.sqrt(30))
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau_b([1, 1], [1, 1]) == 0.0


def test_ordering_score_is_normalised_tau_times_f1() -> None:
    expected = ["a", "b", "c"]
    assert ordering_score(expected, [["a"], ["b"], ["c"]]) == 1.0
    assert ordering_score(expected, [["c"], ["b"], ["a"]]) == 0.0
    # two of three in the right order: tau 1 -> 1.0, F1 = 0.8
    assert math.isclose(ordering_score(expected, [["a"], ["c"]]), 0.8)
    # a and b tied: tau-b = 2 / sqrt(3 * 2)
    tau = 2 / math.sqrt(6)
    assert math.isclose(ordering_score(expected, [["a", "b"], ["c"]]), (tau + 1) / 2)
    assert ordering_score(expected, []) == 0.0


def test_nugget_score_partial_credit() -> None:
    assert nugget_score([1, 0.5, 0], 3) == 0.5
    assert nugget_score([1], 2) == 0.5


def _q(**kw: object) -> Question:
    base: dict[str, object] = {"id": "q", "text": "Where?", "answer": "VPS", "category": "x"}
    return Question(**(base | kw))  # type: ignore[arg-type]


def test_nugget_judge_through_the_model_port() -> None:
    model = ScriptedModel(tool_reply("NuggetScores", {"scores": [1, 0.5]}))
    q = _q(rubric=("mentions VPS", "mentions gunicorn"), category="knowledge_update")
    assert asyncio.run(grade(model, "beam", q, "On a VPS.")) == 0.75
    assert "mentions gunicorn" in model.requests[0].messages[0].text()


def test_event_ordering_through_the_model_port() -> None:
    order = {"order": [["Login"], ["Budget app start"], ["Deployment"]]}
    model = ScriptedModel(tool_reply("ExtractedOrder", order))
    events = ("Budget app start", "Login", "Deployment")
    q = _q(rubric=events, ordering=events, category="event_ordering")
    tau = (2 - 1) / 3
    assert math.isclose(asyncio.run(grade(model, "beam", q, "...")), (tau + 1) / 2)


@pytest.mark.parametrize("correct", [True, False])
def test_binary_judge(correct: bool) -> None:
    model = ScriptedModel(tool_reply("Verdict", {"reasoning": "r", "correct": correct}))
    assert asyncio.run(judge_binary(model, _q(), "VPS")) == float(correct)


def test_abstention_is_judged_as_abstention() -> None:
    model = ScriptedModel(tool_reply("Verdict", {"reasoning": "declined", "correct": True}))
    asyncio.run(judge_binary(model, _q(id="x_abs", abstention=True), "I don't know"))
    assert "cannot be answered" in model.requests[0].system
