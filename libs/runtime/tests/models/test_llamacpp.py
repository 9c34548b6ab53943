"""The in-process llama.cpp provider with the real SmolLM2-135M model, and the engine contract
its fake (used by the provider contract suite) shares with the real engine.

SmolLM2 is tiny: its answers are often poor or cut short. The tests hold it to what must be
true of any output (the grammar keeps it valid JSON of the requested shape until ``max_tokens``,
and whatever it says is read, fed back or refused correctly), never to what it says. Each
generation is short, so the whole module costs a few seconds.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from openai_fakes import FakeEngine, Turn
from pydantic import BaseModel

from mnemo_runtime.models import (
    MalformedOutput,
    Message,
    ModelRequest,
    Stage,
    ToolChoice,
    ToolSpec,
    structured,
)
from mnemo_runtime.models.llamacpp_engine import (
    EngineRejected,
    EngineTimeout,
    LlamaCppEngine,
    LlamaCppOptions,
)
from mnemo_runtime.models.llamacpp_provider import LlamaCppModel

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class Where(BaseModel):
    """Where the person lives."""

    city: str


SEARCH = ToolSpec(
    name="search",
    description="Search what is known about a person.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def city_body(max_tokens: int = 24) -> dict:
    return {
        "messages": [
            {"role": "system", "content": "Answer with JSON."},
            {"role": "user", "content": "Alice: I live in Porto. Where does Alice live?"},
        ],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": CITY}},
    }


@pytest.fixture(params=["fake", "smollm2"])
def engine(request, smollm2):
    if request.param == "fake":
        return FakeEngine(Turn(tool="w", input={"city": "Porto"}))
    return smollm2


def run(engine, body, *, deadline_s: float = 120.0, cancelled: threading.Event | None = None):
    return engine.chat(
        body, deadline=time.monotonic() + deadline_s, cancelled=cancelled or threading.Event()
    )


def test_a_schema_constrained_answer_is_json_of_that_shape(engine):
    completion = run(engine, city_body())

    [choice] = completion["choices"]
    assert choice["finish_reason"] in {"stop", "length"}
    usage = completion["usage"]
    assert usage["prompt_tokens"] > 0 and 1 <= usage["completion_tokens"] <= 24
    if choice["finish_reason"] == "stop":
        answer = json.loads(choice["message"]["content"])
        assert isinstance(answer, dict) and isinstance(answer["city"], str)


def test_past_its_deadline_a_generation_stops_with_a_timeout(engine):
    with pytest.raises(EngineTimeout):
        run(engine, city_body(), deadline_s=-1.0)


def test_a_malformed_request_is_rejected(engine):
    with pytest.raises(EngineRejected) as raised:
        run(engine, {"messages": "where does alice live?"})

    assert raised.value.status == 400


def test_a_cancelled_generation_stops_at_its_next_token(smollm2):
    cancelled = threading.Event()
    endless = {
        "messages": [{"role": "user", "content": "Tell me a long story."}],
        "max_tokens": 3000,
        "ignore_eos": True,  # llama.cpp's: the story cannot end by itself
    }
    threading.Timer(0.3, cancelled.set).start()

    completion = run(smollm2, endless, cancelled=cancelled)

    # A few tokens before the cancel, none of the thousands it was allowed after it.
    assert len(completion["choices"][0]["message"]["content"].split()) < 1000


def test_a_prompt_longer_than_the_context_is_rejected(smollm2):
    too_long = {"messages": [{"role": "user", "content": "word " * 5000}], "max_tokens": 4}

    with pytest.raises(EngineRejected) as raised:
        run(smollm2, too_long)

    assert raised.value.status == 400
    assert "context" in raised.value.reason


async def test_structured_output_from_the_real_model_is_validated_or_refused(smollm2, calls):
    model = LlamaCppModel(smollm2, timeout_s=120, calls=calls)
    ask = ModelRequest(
        stage=Stage.DERIVER,
        system="You extract facts.",
        messages=(Message.user("Alice: I live in Porto. Where does Alice live?"),),
        max_tokens=32,
        temperature=0.0,
    )

    try:
        where = await structured(model, ask, Where, attempts=2)
    except MalformedOutput as err:
        assert err.attempts == 2
        assert calls.ledger.stage(Stage.DERIVER).calls == 2
    else:
        assert isinstance(where.city, str)
        assert 1 <= calls.ledger.stage(Stage.DERIVER).calls <= 2
    usage = calls.ledger.stage(Stage.DERIVER)
    assert usage.failures == 0 and usage.input_tokens > 0 and usage.output_tokens > 0


async def test_a_tool_loop_turn_of_the_real_model_is_a_call_or_an_answer(smollm2, calls):
    model = LlamaCppModel(smollm2, timeout_s=120, calls=calls)
    ask = ModelRequest(
        stage=Stage.DIALECTIC_LOW,
        system="Answer questions about Alice. Search before answering.",
        messages=(Message.user("What is Alice's job?"),),
        tools=(SEARCH,),
        tool_choice=ToolChoice(),
        max_tokens=48,
        temperature=0.0,
    )

    response = await model.complete(ask)

    if response.stop_reason == "max_tokens":
        assert all(c.malformed for c in response.tool_calls) or response.text
    elif response.tool_calls:
        # The grammar allows nothing else: the one tool, with a string query.
        [call] = response.tool_calls
        assert (call.name, call.malformed, call.id) == ("search", None, "call_0")
        assert isinstance(call.input["q"], str)
        assert response.stop_reason == "tool_use"
    else:
        assert response.text and response.stop_reason == "end_turn"


class Waiting:
    """An engine that generates until its caller cancels, and says whether it was told."""

    name = "waiting.gguf"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.told = threading.Event()

    def chat(self, body, *, deadline, cancelled):
        self.started.set()
        if cancelled.wait(timeout=30):
            self.told.set()
        return {"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}


async def test_cancelling_a_call_cancels_its_generation(calls):
    engine = Waiting()
    model = LlamaCppModel(engine, timeout_s=120, calls=calls)
    task = asyncio.create_task(
        model.complete(ModelRequest(stage=Stage.SUMMARIZER, messages=(Message.user("Go on."),)))
    )
    assert await asyncio.to_thread(engine.started.wait, 10)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(engine.told.wait, 10)


def test_the_engine_refuses_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        LlamaCppEngine(tmp_path / "missing.gguf", LlamaCppOptions())


async def test_a_repeat_penalty_is_sent_to_llamacpp_only_when_set(calls):
    plain, penalised = FakeEngine(Turn(text="a")), FakeEngine(Turn(text="b"))
    ask = ModelRequest(stage=Stage.SUMMARIZER, messages=(Message.user("Summarise."),))

    await LlamaCppModel(plain, calls=calls).complete(ask)
    await LlamaCppModel(penalised, repeat_penalty=1.3, calls=calls).complete(ask)

    assert "repeat_penalty" not in plain.bodies[0]
    assert penalised.bodies[0]["repeat_penalty"] == 1.3
