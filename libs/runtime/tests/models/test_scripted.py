"""ScriptedModel and the record/replay cassette."""

from __future__ import annotations

import json

import pytest

from mnemo_runtime.models import Message, ModelRequest, ModelUnavailable, Stage
from mnemo_runtime.models.scripted import (
    CassetteMiss,
    CassetteMode,
    RecordReplayModel,
    ScriptedModel,
    ScriptExhausted,
    request_key,
    text_reply,
    tool_reply,
)


def ask(text: str, stage: Stage = Stage.SUMMARIZER) -> ModelRequest:
    return ModelRequest(stage=stage, messages=(Message.user(text),))


async def test_scripted_model_replies_in_order_and_records_requests():
    model = ScriptedModel(text_reply("one"), lambda r: text_reply(r.messages[0].text().upper()))

    first = await model.complete(ask("a"))
    second = await model.complete(ask("b"))

    assert (first.text, second.text) == ("one", "B")
    assert [r.messages[0].text() for r in model.requests] == ["a", "b"]
    assert model.remaining == 0


async def test_scripted_model_raises_scripted_errors():
    model = ScriptedModel(ModelUnavailable("503", attempts=4)).then(text_reply("ok"))

    with pytest.raises(ModelUnavailable):
        await model.complete(ask("a"))
    assert (await model.complete(ask("a"))).text == "ok"


async def test_scripted_model_falls_back_then_runs_out():
    fallback = ScriptedModel(otherwise=lambda r: text_reply("always"))
    empty = ScriptedModel()

    assert (await fallback.complete(ask("x"))).text == "always"
    with pytest.raises(ScriptExhausted, match="call #1"):
        await empty.complete(ask("x"))


def test_tool_reply_builds_a_tool_call():
    reply = tool_reply("Summary", {"text": "hi"}, call_id="c7")

    assert reply.stop_reason == "tool_use"
    assert reply.tool_calls[0].model_dump() == {
        "id": "c7",
        "name": "Summary",
        "input": {"text": "hi"},
        "malformed": None,
    }


def test_request_key_is_stable_and_sensitive():
    assert request_key(ask("a")) == request_key(ask("a"))
    assert request_key(ask("a")) != request_key(ask("b"))
    assert request_key(ask("a")) != request_key(ask("a", Stage.DERIVER))
    assert request_key(ask("a")) != request_key(ask("a").model_copy(update={"max_tokens": 7}))


async def test_record_then_replay_without_the_inner_model(tmp_path):
    cassette = tmp_path / "cassettes" / "summarizer.jsonl"
    inner = ScriptedModel(text_reply("first", input_tokens=40), tool_reply("T", {"x": 1}))
    recorder = RecordReplayModel(cassette, mode=CassetteMode.RECORD, inner=inner)
    recorded = [await recorder.complete(ask("a")), await recorder.complete(ask("b"))]

    replayer = RecordReplayModel(cassette, mode=CassetteMode.REPLAY_OR_FAIL)
    replayed = [await replayer.complete(ask("a")), await replayer.complete(ask("b"))]

    assert replayed == recorded
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line["key"] for line in lines] == [request_key(ask("a")), request_key(ask("b"))]
    assert lines[0]["request"]["messages"][0]["content"][0]["text"] == "a"


async def test_replay_or_fail_raises_on_an_unknown_request(tmp_path):
    cassette = tmp_path / "c.jsonl"
    recorder = RecordReplayModel(
        cassette, mode=CassetteMode.RECORD, inner=ScriptedModel(text_reply("a"))
    )
    await recorder.complete(ask("a"))

    replayer = RecordReplayModel(cassette, mode=CassetteMode.REPLAY_OR_FAIL)
    with pytest.raises(CassetteMiss, match="summarizer"):
        await replayer.complete(ask("never recorded"))


async def test_replay_mode_records_only_what_is_missing(tmp_path):
    cassette = tmp_path / "c.jsonl"
    await RecordReplayModel(
        cassette, mode=CassetteMode.RECORD, inner=ScriptedModel(text_reply("a"))
    ).complete(ask("a"))
    inner = ScriptedModel(text_reply("b"))
    model = RecordReplayModel(cassette, mode=CassetteMode.REPLAY, inner=inner)

    assert (await model.complete(ask("a"))).text == "a"
    assert (await model.complete(ask("b"))).text == "b"
    assert [r.messages[0].text() for r in inner.requests] == ["b"]
    assert len(cassette.read_text().splitlines()) == 2


async def test_repeated_requests_replay_in_recorded_order(tmp_path):
    cassette = tmp_path / "c.jsonl"
    inner = ScriptedModel(text_reply("1"), text_reply("2"))
    recorder = RecordReplayModel(cassette, mode=CassetteMode.RECORD, inner=inner)
    await recorder.complete(ask("same"))
    await recorder.complete(ask("same"))

    replayer = RecordReplayModel(cassette)
    texts = [(await replayer.complete(ask("same"))).text for _ in range(3)]

    assert texts == ["1", "2", "2"]


async def test_record_mode_starts_a_fresh_cassette(tmp_path):
    cassette = tmp_path / "c.jsonl"
    cassette.write_text('{"key": "stale", "request": {}, "response": {}}\n')

    await RecordReplayModel(
        cassette, mode=CassetteMode.RECORD, inner=ScriptedModel(text_reply("new"))
    ).complete(ask("a"))

    assert "stale" not in cassette.read_text()


def test_recording_needs_an_inner_model(tmp_path):
    with pytest.raises(ValueError, match="inner model"):
        RecordReplayModel(tmp_path / "c.jsonl", mode=CassetteMode.RECORD)
