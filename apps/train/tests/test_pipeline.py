"""``mnemo train deriver-data`` end to end on scripted teacher and judges: counts, gate, resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from corpus_fixtures import write_benchmarks, write_corpus

from mnemo_cli.__main__ import main as mnemo
from mnemo_deriver.contract import DERIVER_PROMPT, find_batch, parse_batch
from mnemo_runtime.models import ModelRequest, ModelResponse
from mnemo_runtime.models.scripted import ScriptedModel, tool_reply
from mnemo_train.pipeline import Options, Pipeline
from mnemo_train.records import target_observations


def _teacher(request: ModelRequest) -> ModelResponse:
    """Per batch: one grounded observation and three the grounding check must drop."""
    target, messages = parse_batch(find_batch(request.messages[0].text()) or "")
    own = next(m for m in messages if m.peer_id == target and not m.is_context)
    ctx = next(m for m in messages if m.is_context)
    obs = [
        {
            "fact": f"{target} said something.",
            "source_message_index": own.index,
            "source_span": own.content[:12],
        },
        {"fact": "Out of range.", "source_message_index": 42, "source_span": "x"},
        {
            "fact": "Not said.",
            "source_message_index": own.index,
            "source_span": "words never written",
        },
        {"fact": "Context.", "source_message_index": ctx.index, "source_span": ctx.content[:8]},
    ]
    tool = request.forced_tool()
    assert tool is not None
    return tool_reply(tool.name, {"observations": obs})


def _judge(atomicity: list[float], redundancy: list[float]):
    state = {"n": 0}

    def respond(request: ModelRequest) -> ModelResponse:
        tool = request.forced_tool()
        assert tool is not None
        n = request.messages[0].text().split("Observations:\n")[-1].count("\n") + 1
        scores = []
        for i in range(n):
            k = state["n"] % len(atomicity)
            state["n"] += 1
            scores.append(
                {"observation": i, "atomicity": atomicity[k], "redundancy": redundancy[k]}
            )
        return tool_reply(tool.name, {"scores": scores})

    return ScriptedModel(otherwise=respond)


def _pipeline(tmp: Path, teacher, judges) -> Pipeline:
    return Pipeline(tmp / "out", Options(benchmarks=write_benchmarks(tmp)), teacher, judges)


def test_every_stage_counts_what_it_does_and_writes_sft_records(tmp_path: Path) -> None:
    agree = (
        _judge([0.9, 0.3, 0.6, 0.1], [0.1, 0.8, 0.1, 0.4]),
        _judge([0.95, 0.26, 0.7, 0.0], [0.2, 0.9, 0.0, 0.3]),
    )
    report = asyncio.run(
        _pipeline(tmp_path, ScriptedModel(otherwise=_teacher), agree).run(write_corpus(tmp_path))
    )
    s = report["stages"]
    assert (s["0-read"]["conversations"], s["0-read"]["not_a_conversation"]) == (8, 3)
    assert (s["1-dedup"]["exact"], s["1-dedup"]["near"], s["1-dedup"]["out"]) == (1, 1, 6)
    assert {k: s["2-filters"][k] for k in ("too_short", "low_quality", "role_play", "out")} == {
        "too_short": 1,
        "low_quality": 1,
        "role_play": 1,
        "out": 3,
    }
    assert s["3-decontamination"]["dropped_list"] == [
        {
            "id": "copied",
            "benchmark": "locomo",
            "source": "conv-b",
            "shared": s["3-decontamination"]["dropped_list"][0]["shared"],
        }
    ]
    assert s["4-strata"]["out"] == 2
    assert (s["5-teacher"]["batches"], s["5-teacher"]["malformed"], s["5-teacher"]["proposed"]) == (
        4,
        0,
        16,
    )
    assert {
        k: s["6-grounding"][k]
        for k in ("kept", "index_out_of_range", "span_not_in_message", "not_the_targets_message")
    } == {
        "kept": 4,
        "index_out_of_range": 4,
        "span_not_in_message": 4,
        "not_the_targets_message": 4,
    }
    assert s["7-judges"]["accepted"] and s["7-judges"]["kappa_atomicity"] == 1.0
    assert report["status"] == "accepted" and s["8-records"]["written"] == 4
    records = [
        json.loads(line) for line in (tmp_path / "out" / "sft.jsonl").read_text().splitlines()
    ]
    first = records[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert first["messages"][0]["content"] == DERIVER_PROMPT
    target, _ = parse_batch(first["messages"][1]["content"])
    assert [o.fact for o in target_observations(first).observations] == [
        f"{target} said something."
    ]
    assert first["tools"][0]["function"]["name"] == "record_observations"


def test_a_run_whose_judges_disagree_on_both_axes_is_rejected(tmp_path: Path) -> None:
    a = _judge([0.9, 0.1, 0.9, 0.1], [0.9, 0.1, 0.9, 0.1])
    b = _judge([0.1, 0.9, 0.1, 0.9], [0.1, 0.9, 0.1, 0.9])
    report = asyncio.run(
        _pipeline(tmp_path, ScriptedModel(otherwise=_teacher), (a, b)).run(write_corpus(tmp_path))
    )
    assert report["status"] == "rejected"
    assert (
        report["stages"]["7-judges"]["kappa_atomicity"] < 0.4
        and report["stages"]["7-judges"]["kappa_redundancy"] < 0.4
    )
    assert (tmp_path / "out" / "sft.jsonl").read_text() == ""


def test_judge_answers_failing_their_schema_are_counted(tmp_path: Path) -> None:
    bad = ScriptedModel(
        otherwise=lambda r: tool_reply(
            "JudgeScores", {"scores": [{"observation": 0, "atomicity": 2.0, "redundancy": 0.0}]}
        )
    )
    good = _judge([0.9], [0.1])
    report = asyncio.run(
        _pipeline(tmp_path, ScriptedModel(otherwise=_teacher), (good, bad)).run(
            write_corpus(tmp_path)
        )
    )
    j = report["stages"]["7-judges"]
    assert j["judge_b_malformed"] == 4 and j["scored_items"] == 0 and report["status"] == "rejected"


def test_the_run_resumes_after_a_crash_without_redoing_work(tmp_path: Path) -> None:
    calls = {"n": 0}

    def crashing(request: ModelRequest) -> ModelResponse:
        calls["n"] += 1
        if calls["n"] > 2:  # the first conversation's two batches go through, then the process dies
            raise RuntimeError("killed")
        return _teacher(request)

    corpus = write_corpus(tmp_path)
    with pytest.raises(RuntimeError, match="killed"):
        asyncio.run(_pipeline(tmp_path, ScriptedModel(otherwise=crashing), None).run(corpus))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["stages"]["4-strata"]["done"] and "5-teacher" not in report["stages"]
    second = ScriptedModel(otherwise=_teacher)
    report = asyncio.run(_pipeline(tmp_path, second, None).run(corpus))
    assert len(second.requests) == 2  # only the second conversation's batches
    assert report["stages"]["5-teacher"]["batches"] == 4 and report["stages"]["7-judges"]["skipped"]
    assert report["status"] == "accepted" and report["stages"]["8-records"]["written"] == 4


def test_the_command_line_runs_offline_with_the_local_reasoner_as_teacher(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "MNEMO_MODEL_DEFAULT",
        "MNEMO_MODEL_DERIVER",
    ):
        monkeypatch.delenv(key, raising=False)
    corpus, out = write_corpus(tmp_path), tmp_path / "cli"
    argv = [
        "train",
        "deriver-data",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--benchmarks",
        str(write_benchmarks(tmp_path)),
    ]
    with pytest.raises(SystemExit) as no_judges:
        mnemo(argv)
    assert no_judges.value.code == 2 and "--no-judges" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        mnemo([*argv, "--no-judges"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert "3-decontamination" in printed and "status: accepted" in printed
    records = (out / "sft.jsonl").read_text().splitlines()
    assert len(records) == 4 and all(
        target_observations(json.loads(r)).observations for r in records
    )
