"""``mnemo bench deriver`` end to end: traces, offline Coverage, the judged path, the dry run."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
from deriver_fixtures import write_locomo_with_facts

from mnemo_bench import cli
from mnemo_bench.deriver import app
from mnemo_bench.deriver.judges import (
    COVERAGE_SYSTEM,
    GOLD_SYSTEM,
    MOLECULAR_SYSTEM,
    QUALITY_SYSTEM,
)
from mnemo_bench.deriver.traces import batches, derive_session, session_messages
from mnemo_bench.readers import read_locomo
from mnemo_deriver.contract import find_batch, parse_batch
from mnemo_deriver.local import local_deriver
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.models import ModelRequest, ModelResponse
from mnemo_runtime.models.scripted import ScriptedModel, tool_reply
from mnemo_runtime.tokens import TokenCounter


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(["deriver", *argv])


def _echo_deriver(request: ModelRequest) -> ModelResponse:
    """One observation per target message, its whole text as the span."""
    target, messages = parse_batch(find_batch(request.messages[0].text()) or "")
    obs = [
        {
            "fact": f"{target} said: {m.content}",
            "source_message_index": m.index,
            "source_span": m.content,
        }
        for m in messages
        if m.peer_id == target and not m.is_context
    ]
    tool = request.forced_tool()
    assert tool is not None
    return tool_reply(tool.name, {"observations": obs})


def _faulty_deriver(request: ModelRequest) -> ModelResponse:
    """Proposes one grounded observation and three that the deriver must drop."""
    _, messages = parse_batch(find_batch(request.messages[0].text()) or "")
    own = next(m for m in messages if not m.is_context)
    ctx = next((m for m in messages if m.is_context), None)
    obs = [
        {
            "fact": "A grounded fact.",
            "source_message_index": own.index,
            "source_span": own.content[:10],
        },
        {"fact": "Out of range.", "source_message_index": 99, "source_span": "x"},
        {
            "fact": "Not in the message.",
            "source_message_index": own.index,
            "source_span": "never said",
        },
    ]
    if ctx is not None:
        obs.append(
            {
                "fact": "From context.",
                "source_message_index": ctx.index,
                "source_span": ctx.content[:5],
            }
        )
    tool = request.forced_tool()
    assert tool is not None
    return tool_reply(tool.name, {"observations": obs})


def test_batches_follow_the_token_target_and_carry_the_preceding_turn(tmp_path: Path) -> None:
    case = read_locomo(write_locomo_with_facts(tmp_path))[0]
    messages = session_messages(case, case.sessions[0], TokenCounter())
    one_each = list(batches(messages, "ann", DeriverSettings(token_target=1)))
    assert [len(b.items) for b in one_each] == [1, 1]
    assert one_each[0].items[0].context is None
    assert (
        one_each[1].items[0].context is not None and one_each[1].items[0].context.peer_id == "bob"
    )
    assert [len(b.items) for b in batches(messages, "ann", DeriverSettings())] == [2]


async def test_a_trace_keeps_what_was_proposed_and_why_it_was_dropped(tmp_path: Path) -> None:
    case = read_locomo(write_locomo_with_facts(tmp_path))[0]
    trace = await derive_session(
        ScriptedModel(otherwise=_faulty_deriver),
        case,
        case.sessions[0],
        "ann",
        DeriverSettings(token_target=1),
        TokenCounter(),
    )
    by_fact = {p.fact: p for p in trace.proposed}
    assert by_fact["A grounded fact."].kept and by_fact["A grounded fact."].grounded
    assert by_fact["A grounded fact."].position in (0, 2)
    assert by_fact["Out of range."].position is None and not by_fact["Out of range."].grounded
    assert "no message with index" in by_fact["Out of range."].reason
    assert not by_fact["Not in the message."].grounded and not by_fact["Not in the message."].kept
    ctx = by_fact["From context."]
    assert ctx.grounded and not ctx.kept and "did not write" in ctx.reason
    assert trace.target_messages() == 2 and len(trace.kept()) == 2


async def test_malformed_deriver_output_is_counted_not_fatal(tmp_path: Path) -> None:
    case = read_locomo(write_locomo_with_facts(tmp_path))[0]
    bad = ScriptedModel(otherwise=lambda r: tool_reply("DeriverOutput", {"observations": "no"}))
    trace = await derive_session(
        bad, case, case.sessions[0], "ann", DeriverSettings(), TokenCounter()
    )
    assert trace.malformed_batches == 1 and trace.proposed == []


def test_offline_run_scores_reference_facts_and_resumes(tmp_path: Path) -> None:
    data = write_locomo_with_facts(tmp_path)
    args = _args("--offline", "--data", str(data))
    cases = read_locomo(data)
    out = tmp_path / "out"
    summary = asyncio.run(app.run_offline(args, cases, out, deriver=local_deriver()))
    row = summary["rows"]["conv-t"]
    assert row["gold"] == 7 and row["messages"] == 6
    # Rex is stated and the cello is not: some but not all reference facts are covered.
    assert 0.0 < row["R"] < 1.0 and row["R"] <= row["R_w"] <= 1.0
    assert row["grounding_precision"] == 1.0 and row["malformed_batches"] == 0
    assert summary["rows"]["held-out (pooled)"]["gold"] == 7
    again = asyncio.run(app.run_offline(args, cases, out, deriver=ScriptedModel()))
    assert again["rows"] == summary["rows"]


def _judge(request: ModelRequest) -> ModelResponse:
    tool = request.forced_tool()
    assert tool is not None
    text = request.messages[0].text()
    observations = text.split("Observations:\n")[-1].splitlines() if "Observations:" in text else []
    if request.system == GOLD_SYSTEM:
        answer: dict[str, object] = {
            "facts": [
                {"fact": "g0", "importance": "critical"},
                {"fact": "g1", "importance": "trivial"},
            ]
        }
    elif request.system == COVERAGE_SYSTEM:
        answer = {
            "labels": [
                {"gold": 0, "label": "covered", "observations": [0]},
                {"gold": 1, "label": "partial"},
                {"gold": 5, "label": "covered"},
            ]
        }
    elif request.system == QUALITY_SYSTEM:
        flags = [
            {
                "observation": i,
                **{
                    f: i == 0 and len(observations) > 1
                    for f in (
                        "hallucination",
                        "over_inference",
                        "attribution_failure",
                        "misattribution",
                        "misframing",
                        "meta_conversational",
                        "tautology",
                    )
                },
            }
            for i in range(len(observations))
        ]
        answer = {"observations": flags, "redundancy": [[0, 1]], "topical_fixation": []}
    elif request.system == MOLECULAR_SYSTEM:
        # Session 2's units get a score out of range every time: a schema failure.
        decon = 1.5 if "Lisbon" in text or "surf" in text else 0.16
        answer = {
            "observations": [
                {"observation": i, "decontextuality": decon, "minimality": 1.0}
                for i in range(len(observations))
            ]
        }
    else:
        raise AssertionError(request.system[:40])
    return tool_reply(tool.name, answer)


def test_judged_run_on_scripted_models_scores_counts_faults_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo_with_facts(tmp_path)
    args, cases, out = _args("--data", str(data)), read_locomo(data), tmp_path / "out"
    summary = asyncio.run(
        app.run_judged(
            args,
            cases,
            out,
            deriver=ScriptedModel(otherwise=_echo_deriver),
            judge=ScriptedModel(otherwise=_judge),
        )
    )
    assert summary is not None
    row = summary["rows"]["conv-t"]
    # Four units (two speakers, two sessions), each with gold g0 covered and g1 partial.
    assert row["gold"] == 8 and row["R"] == 0.5
    assert row["R_w"] == pytest.approx((3.0 + 0.25) / 3.5)
    # Session 1: two observations per unit, the first hallucinated; session 2: one, clean.
    assert row["observations"] == 6 and row["quality"] == pytest.approx(4 / 6)
    assert row["redundant"] == 4
    # Molecular only from session 1's four observations; session 2's answers failed the schema.
    assert row["molecular"] == pytest.approx(0.4)
    # Coverage labels a gold fact 5 that is not there; a redundancy group names a missing one.
    assert row["fault_kinds"] == {
        "coverage_bad_number": 4,
        "molecular_malformed": 2,
        "quality_bad_number": 2,
    }
    report = (out / "deriver-judged.md").read_text()
    assert "Worst observations" in report and "hallucination" in report
    capsys.readouterr()
    again = asyncio.run(
        app.run_judged(args, cases, out, deriver=ScriptedModel(), judge=ScriptedModel())
    )
    assert again == summary
    assert json.loads((out / "judged.jsonl").read_text().splitlines()[0])["key"].startswith(
        "conv-t/"
    )


def test_judged_run_without_a_judge_model_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo_with_facts(tmp_path)
    assert (
        asyncio.run(app.run_judged(_args("--data", str(data)), read_locomo(data), tmp_path)) is None
    )
    assert "cannot judge" in capsys.readouterr().err


def test_dry_run_prints_every_request_and_calls_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    data = write_locomo_with_facts(tmp_path)
    assert cli.main(_args("--dry-run", "--data", str(data), "--out", str(tmp_path / "o"))) == 0
    out = capsys.readouterr().out
    assert "conv-t: 4 units" in out and "model=claude-haiku-4-5 stage=deriver" in out
    for name in ("gold facts", "coverage labels", "quality flags", "molecular"):
        assert f"judge, {name}" in out
    assert "sk-test" not in out
    assert not (tmp_path / "o" / "traces.jsonl").exists()
