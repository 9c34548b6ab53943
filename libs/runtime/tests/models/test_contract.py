"""One contract for every ChatModel: the scripted fake and every provider must give the same
results for the same logical exchange, so the fakes cannot drift. The providers run against
recorded responses (MockTransport), the OpenAI-compatible one also against a local server
speaking the wire format (asking for tool calls through `tools` and through a JSON schema), and
the llama.cpp one on a fake engine (its real engine passes the engine contract with SmolLM2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from openai_fakes import FakeEngine, Script, Turn
from pydantic import SecretStr

from mnemo_runtime.models import (
    ChatModel,
    MalformedOutput,
    Message,
    ModelRequest,
    ModelResponse,
    Stage,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    Usage,
    structured,
)
from mnemo_runtime.models.llamacpp_provider import LlamaCppModel
from mnemo_runtime.models.openai_provider import OpenAICompatibleModel
from mnemo_runtime.models.scripted import ScriptedModel

GOOD = {
    "observations": [
        {"fact": "Alice is a nurse.", "source_index": 2, "source_span": "my night shift"}
    ]
}
BAD = {"observations": [{"fact": "Alice is a nurse.", "source_index": -1}]}


def anthropic_wire(turn: Turn, i: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    if turn.tool:
        content.append(
            {"type": "tool_use", "id": f"toolu_{i}", "name": turn.tool, "input": turn.input}
        )
    body = {
        "id": f"msg_{i}",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": content,
        "stop_reason": "tool_use" if turn.tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return {"status": 200, "headers": {"content-type": "application/json"}, "body": body}


def openai_wire(turn: Turn, i: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool:
        function = {"name": turn.tool, "arguments": json.dumps(turn.input)}
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": function}]
    body = {
        "id": f"chatcmpl-{i}",
        "object": "chat.completion",
        "model": "llama3.1:8b",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if turn.tool else "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return {"status": 200, "headers": {"content-type": "application/json"}, "body": body}


def scripted_turn(turn: Turn, i: int) -> ModelResponse:
    calls = (ToolCall(id=f"call_{i}", name=turn.tool, input=turn.input),) if turn.tool else ()
    return ModelResponse(
        text=turn.text,
        tool_calls=calls,
        stop_reason="tool_use" if turn.tool else "end_turn",
        usage=Usage(input_tokens=10, output_tokens=5),
        model="scripted",
    )


@dataclass
class Harness:
    model: ChatModel
    sent: Callable[[], int]


@pytest.fixture(
    params=["scripted", "anthropic", "openai", "openai-server", "openai-server-json", "llamacpp"]
)
def harness(
    request, anthropic_model, openai_model, fake_openai, calls
) -> Callable[[list[Turn]], Harness]:
    def build(turns: list[Turn]) -> Harness:
        if request.param == "scripted":
            scripted = ScriptedModel(*(scripted_turn(t, i) for i, t in enumerate(turns)))
            return Harness(scripted, lambda: len(scripted.requests))
        if request.param.startswith("openai-server"):
            fake_openai.reset(Script(turns=list(turns), api_key="sk-local", usage=(10, 5)))
            model = OpenAICompatibleModel(
                "llama3.1:8b",
                base_url=fake_openai.base_url,
                api_key=SecretStr("sk-local"),
                structured="json_schema" if request.param.endswith("json") else "tools",
                calls=calls,
            )
            return Harness(model, lambda: len(fake_openai.exchanges))
        if request.param == "llamacpp":
            engine = FakeEngine(*turns, usage=(10, 5))
            return Harness(LlamaCppModel(engine, calls=calls), lambda: len(engine.bodies))
        factory, wire = {
            "anthropic": (anthropic_model, anthropic_wire),
            "openai": (openai_model, openai_wire),
        }[request.param]
        model, replay = factory([wire(t, i) for i, t in enumerate(turns)])
        return Harness(model, lambda: len(replay.requests))

    return build


def ask() -> ModelRequest:
    return ModelRequest(
        stage=Stage.DERIVER,
        system="Extract facts about alice.",
        messages=(Message.user("[2] alice: after my night shift I sleep all day"),),
    )


async def test_structured_returns_the_validated_instance(harness, observations_model):
    h = harness([Turn(tool="Observations", input=GOOD)])

    result = await structured(h.model, ask(), observations_model)

    assert result == observations_model.model_validate(GOOD)
    assert h.sent() == 1


async def test_structured_recovers_from_invalid_input(harness, observations_model):
    h = harness([Turn(tool="Observations", input=BAD), Turn(tool="Observations", input=GOOD)])

    result = await structured(h.model, ask(), observations_model)

    assert result == observations_model.model_validate(GOOD)
    assert h.sent() == 2


async def test_structured_recovers_from_a_missing_tool_call(harness, observations_model):
    h = harness([Turn(text="Alice is a nurse."), Turn(tool="Observations", input=GOOD)])

    result = await structured(h.model, ask(), observations_model)

    assert result == observations_model.model_validate(GOOD)
    assert h.sent() == 2


async def test_structured_gives_up_with_malformed_output(harness, observations_model):
    h = harness([Turn(tool="Observations", input=BAD)] * 3)

    with pytest.raises(MalformedOutput) as raised:
        await structured(h.model, ask(), observations_model, attempts=3)

    assert raised.value.attempts == 3
    assert "source_index" in raised.value.reason
    assert h.sent() == 3


async def test_text_turn_with_usage(harness):
    h = harness([Turn(text="Alice works nights.")])

    response = await h.model.complete(ask())

    assert response.text == "Alice works nights."
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    assert response.usage == Usage(input_tokens=10, output_tokens=5)


async def test_tool_loop_continues_after_a_tool_result(harness):
    search = ToolSpec(
        name="search",
        description="Search observations.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    h = harness([Turn(tool="search", input={"q": "job"}), Turn(text="Alice is a nurse.")])
    request = ask().model_copy(update={"tools": (search,)})

    first = await h.model.complete(request)
    [call] = first.tool_calls
    assert (call.name, call.input, first.stop_reason) == ("search", {"q": "job"}, "tool_use")
    follow_up = request.model_copy(
        update={
            "messages": (
                *request.messages,
                first.to_message(),
                Message.user(ToolResultBlock(tool_use_id=call.id, content="works as a nurse")),
            )
        }
    )
    second = await h.model.complete(follow_up)

    assert second.text == "Alice is a nurse."
    assert h.sent() == 2
