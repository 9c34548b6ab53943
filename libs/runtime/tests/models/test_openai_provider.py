"""The OpenAI-compatible provider against recorded chat-completions responses over MockTransport."""

from __future__ import annotations

import json

import httpx
import pytest

from mnemo_runtime.models import (
    MalformedOutput,
    Message,
    ModelRejected,
    ModelRequest,
    ModelUnavailable,
    Stage,
    ToolChoice,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    structured,
)


def request(**update) -> ModelRequest:
    base = ModelRequest(
        stage=Stage.DERIVER,
        system="Extract atomic, self-contained facts about alice.",
        messages=(Message.user("[0] alice: we adopted a greyhound in March, her name is Pixel"),),
        max_tokens=1500,
        temperature=0.2,
    )
    return base.model_copy(update=update)


def completion(message: dict, finish_reason: str = "tool_calls") -> dict:
    return {
        "status": 200,
        "headers": {"content-type": "application/json"},
        "body": {
            "id": "chatcmpl-x",
            "object": "chat.completion",
            "model": "llama3.1:8b",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        },
    }


async def test_structured_call_sends_forced_function_and_parses_arguments(
    openai_model, recorded, observations_model
):
    model, replay = openai_model(recorded("openai/tool_call.json"))

    result = await structured(model, request(), observations_model)

    assert [o.source_index for o in result.observations] == [0, 2]
    [sent] = replay.requests
    assert sent.method == "POST"
    assert str(sent.url) == "http://vllm.internal:8000/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-proj-test-key"
    assert replay.bodies()[0] == {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "max_tokens": 1500,
        "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "Extract atomic, self-contained facts about alice."},
            {
                "role": "user",
                "content": "[0] alice: we adopted a greyhound in March, her name is Pixel",
            },
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "Observations",
                    "description": "Atomic, self-contained facts about the target peer.",
                    "parameters": observations_model.model_json_schema(),
                },
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "Observations"}},
    }


async def test_no_key_sends_no_authorization(openai_model, recorded):
    model, replay = openai_model(
        recorded("openai/text.json"), base_url="http://localhost:11434/v1", api_key=None
    )

    await model.complete(request())

    assert "authorization" not in replay.requests[0].headers
    assert str(replay.requests[0].url) == "http://localhost:11434/v1/chat/completions"


async def test_text_response_and_usage_accounting(openai_model, recorded, calls, spans):
    model, _ = openai_model(recorded("openai/text.json"))

    response = await model.complete(request(stage=Stage.DIALECTIC_LOW))

    assert response.text.startswith("Alice, a night-shift nurse")
    assert response.stop_reason == "end_turn"
    assert response.model == "llama3.1:8b"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (388, 19)
    usage = calls.ledger.stage(Stage.DIALECTIC_LOW)
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (1, 388, 19)
    [span] = spans.get_finished_spans()
    assert span.attributes["gen_ai.system"] == "openai"
    assert span.attributes["mnemo.stage"] == "dialectic_low"
    assert span.attributes["gen_ai.usage.output_tokens"] == 19


async def test_rate_limit_is_retried(openai_model, recorded, sleeps, calls):
    model, replay = openai_model(recorded("openai/rate_limited_then_ok.json"))

    response = await model.complete(request())

    assert response.text == "Alice is a nurse."
    assert len(replay.requests) == 2
    assert sleeps.waits == [2.0]
    assert calls.ledger.stage(Stage.DERIVER).retries == 1


async def test_persistent_5xx_raises_model_unavailable(openai_model, recorded, sleeps, calls):
    model, replay = openai_model(recorded("openai/unavailable.json"))

    with pytest.raises(ModelUnavailable) as raised:
        await model.complete(request())

    assert raised.value.attempts == 3
    assert raised.value.reason.startswith("503")
    assert len(replay.requests) == 3
    assert sleeps.waits == [0.375, 0.75]
    assert calls.ledger.stage(Stage.DERIVER).failures == 1


async def test_transport_errors_are_retried(openai_model, recorded, sleeps):
    model, replay = openai_model(
        [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), *recorded("openai/text.json")]
    )

    response = await model.complete(request())

    assert response.usage.output_tokens == 19
    assert len(replay.requests) == 3
    assert len(sleeps.waits) == 2


async def test_unauthorized_is_rejected_without_retrying(openai_model, recorded, sleeps):
    model, replay = openai_model(recorded("openai/unauthorized.json"))

    with pytest.raises(ModelRejected) as raised:
        await model.complete(request())

    assert raised.value.status == 401
    assert len(replay.requests) == 1
    assert sleeps.waits == []


async def test_unreadable_json_arguments_are_fed_back_then_corrected(
    openai_model, recorded, observations_model
):
    model, replay = openai_model(recorded("openai/malformed_then_corrected.json"))

    result = await structured(model, request(), observations_model)

    assert result.observations[0].source_index == 2
    second = replay.bodies()[1]
    echoed, feedback = second["messages"][-2:]
    assert echoed["role"] == "assistant"
    assert echoed["tool_calls"][0]["id"] == "call_k2m9x4qz"
    assert json.loads(echoed["tool_calls"][0]["function"]["arguments"]) == {}
    assert feedback["role"] == "tool"
    assert feedback["tool_call_id"] == "call_k2m9x4qz"
    assert feedback["content"].startswith("Error: Invalid input: arguments are not a JSON object")


async def test_malformed_output_after_every_attempt(openai_model, recorded, observations_model):
    [broken, _] = recorded("openai/malformed_then_corrected.json")
    model, replay = openai_model([broken])

    with pytest.raises(MalformedOutput) as raised:
        await structured(model, request(), observations_model)

    assert raised.value.attempts == 3
    assert len(replay.requests) == 3


async def test_server_quirks_object_arguments_and_missing_ids(openai_model):
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"type": "function", "function": {"name": "search", "arguments": {"q": "job"}}},
            {"type": "function", "function": {"name": "search", "arguments": "[1, 2]"}},
        ],
    }
    model, _ = openai_model([completion(message)])

    response = await model.complete(request())

    first, second = response.tool_calls
    assert (first.id, first.input, first.malformed) == ("call_0", {"q": "job"}, None)
    assert (second.id, second.input, second.malformed) == ("call_1", {}, "decoded to list")
    assert response.stop_reason == "tool_use"


async def test_conversation_with_tool_results_maps_to_tool_messages(openai_model, recorded):
    model, replay = openai_model(recorded("openai/text.json"))
    search = ToolSpec(name="search", description="Search observations.", input_schema={})
    turn = request(
        tools=(search,),
        tool_choice=ToolChoice(mode="any"),
        temperature=None,
        messages=(
            Message.user("What does alice do?"),
            Message.assistant(ToolUseBlock(id="call_9", name="search", input={"q": "job"})),
            Message.user(
                ToolResultBlock(tool_use_id="call_9", content="no index", is_error=True),
                "Try again.",
            ),
        ),
    )

    await model.complete(turn)

    body = replay.bodies()[0]
    assert "temperature" not in body
    assert body["tool_choice"] == "required"
    assert body["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "job"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "Error: no index"},
        {"role": "user", "content": "Try again."},
    ]
