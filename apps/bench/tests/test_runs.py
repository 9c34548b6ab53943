import argparse
import asyncio
import json
from pathlib import Path

import pytest
from fixtures import write_beam, write_locomo

from mnemo_bench.cases import Case, Question
from mnemo_bench.cli import add_arguments, main
from mnemo_bench.offline import Scope, run_retrieval
from mnemo_bench.offline_app import scope_for
from mnemo_bench.online import Answer, JudgedRun
from mnemo_bench.readers import read_beam, read_locomo
from mnemo_bench.report import bar_chart_svg, judged_report, retrieval_table
from mnemo_bench.retrievers import BM25Retriever, Retrieved, SkipRetriever
from mnemo_bench.state import RunState
from mnemo_runtime.models import ModelRequest, ModelResponse
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply


class FakeMemory:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    def load(self, case: Case) -> None:
        self.loaded.append(case.id)

    async def answer(self, case: Case, question: Question) -> Answer:
        return Answer(f"memory says {question.answer}", tokens=10)


def _judge(request: ModelRequest) -> ModelResponse:
    text = request.messages[0].text()
    return tool_reply("Verdict", {"reasoning": "r", "correct": "memory says" in text})


def test_judged_run_scores_resumes_and_reports(tmp_path: Path) -> None:
    cases = read_locomo(write_locomo(tmp_path))
    memory = FakeMemory()
    answerer = ScriptedModel(otherwise=lambda _r: text_reply("no idea", input_tokens=90))
    run = JudgedRun(
        benchmark="locomo",
        memory=memory,
        answerer=answerer,
        judge=ScriptedModel(otherwise=_judge),
        state=RunState(tmp_path / "out"),
        scope=scope_for("locomo", with_adversarial=False),
    )
    summary = asyncio.run(run.run(cases))
    assert summary["questions"] == 4  # category 5 left out by default
    assert summary["overall"]["mnemo"] == 1.0 and summary["overall"]["baseline"] == 0.0
    assert summary["overall"]["delta"] == 1.0
    assert summary["overall"]["baseline_tokens"] == 90
    assert "materi" in answerer.requests[0].messages[0].text()
    # a second run finds every question recorded: no ingest, no model call
    again = JudgedRun(
        benchmark="locomo",
        memory=memory,
        answerer=ScriptedModel(),
        judge=ScriptedModel(),
        state=RunState(tmp_path / "out"),
        scope=scope_for("locomo", with_adversarial=False),
    )
    assert asyncio.run(again.run(cases))["questions"] == 4
    assert memory.loaded == ["conv-x"]
    judged_report(summary, tmp_path / "out")
    assert "| overall | 4 |" in (tmp_path / "out" / "report.md").read_text()
    assert (tmp_path / "out" / "chart.svg").read_text().startswith("<svg")


def test_beam_judged_run_uses_nuggets(tmp_path: Path) -> None:
    cases = read_beam(write_beam(tmp_path))

    def judge(request: ModelRequest) -> ModelResponse:
        if "Reference events" in request.messages[0].text():
            return tool_reply("ExtractedOrder", {"order": [["Budget app start"], ["Login"]]})
        return tool_reply("NuggetScores", {"scores": [1, 0.5]})

    run = JudgedRun(
        benchmark="beam",
        memory=FakeMemory(),
        answerer=ScriptedModel(),
        judge=ScriptedModel(otherwise=judge),
        state=RunState(tmp_path / "out"),
        scope=Scope(),
        baseline=False,
    )
    summary = asyncio.run(run.run(cases))
    assert summary["by_type"]["knowledge_update"]["mnemo"] == 0.75
    assert summary["by_type"]["event_ordering"]["mnemo"] == pytest.approx(0.8)
    assert summary["by_type"]["abstention"]["mnemo"] == 1.0  # one nugget scored 1
    assert "baseline" not in summary["overall"]


class Unreachable:
    name = "mnemo"

    async def prepare(self, case: Case) -> None:
        raise SkipRetriever("server down")

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:
        raise AssertionError("not reached")


def test_retrieval_run_skips_and_resumes(tmp_path: Path) -> None:
    cases = read_locomo(write_locomo(tmp_path))
    skipped: dict[str, str] = {}
    scope = scope_for("locomo", with_adversarial=False)
    state = RunState(tmp_path / "out", "retrieval.jsonl")
    summary = asyncio.run(
        run_retrieval(cases, [BM25Retriever(), Unreachable()], state, scope, skipped)
    )
    assert skipped == {"mnemo": "server down"}
    assert summary["questions"] == 3  # with evidence, categories 1-4
    assert summary["retrievers"]["bm25"]["recall@20"] > 0.5
    assert "mnemo: skipped (server down)" in retrieval_table(summary)
    lines = (tmp_path / "out" / "retrieval.jsonl").read_text().splitlines()
    again = asyncio.run(
        run_retrieval(
            cases, [BM25Retriever()], RunState(tmp_path / "out", "retrieval.jsonl"), scope, {}
        )
    )
    assert again["retrievers"] == summary["retrievers"]
    assert len((tmp_path / "out" / "retrieval.jsonl").read_text().splitlines()) == len(lines)


def test_dry_run_prints_requests_without_calling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    data = write_locomo(tmp_path)
    args = parser.parse_args(["locomo", "--dry-run", "--data", str(data), "--out", str(tmp_path)])
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "peer.chat(question, reasoning_level='low')" in out
    assert "model=claude-sonnet-4-6" in out and "You answer questions" in out
    assert not (tmp_path / "summary.json").exists()


def test_svg_chart_has_a_bar_per_value() -> None:
    svg = bar_chart_svg("t", ["a", "b"], {"x": [0.5, 1.0], "y": [0.2, 0.0]})
    assert svg.count("<rect") == 4 + 2  # bars + legend swatches
    json.dumps(svg)


def test_state_survives_a_restart(tmp_path: Path) -> None:
    state = RunState(tmp_path)
    state.mark_session("c1", "session-1")
    state.mark_ingested("c2", {"messages": 3})
    state.append({"key": "q1", "x": 1})
    with (tmp_path / "questions.jsonl").open("a") as f:
        f.write('{"key": "q2", "x"')  # a line cut short by a crash
    again = RunState(tmp_path)
    assert again.sessions_done("c1") == ["session-1"]
    assert again.ingested("c2") == {"messages": 3} and again.ingested("c1") is None
    assert again.result("q1") == {"key": "q1", "x": 1} and again.result("q2") is None
    again.append({"key": "q3"})
    assert RunState(tmp_path).result("q3") == {"key": "q3"}
