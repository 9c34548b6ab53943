"""The Anthropic provider against recorded Messages API responses replayed over MockTransport."""

from __future__ import annotations

import httpx2
import pytest

from mnemo_runtime.models import (
    MalformedOutput,
    Message,
    ModelRejected,
    ModelRequest,
    ModelUnavailable,
    Stage,
    ToolResultBlock,
    ToolUseBlock,
    structured,
)

CONVERSATION = (
    "[0] alice: we adopted a greyhound in March, her name is Pixel\n"
    "[1] bob: congrats!\n"
    "[2] alice: after my night shift at the hospital I just want to walk her"
)


def deriver_request() -> ModelRequest:
    return ModelRequest(
        stage=Stage.DERIVER,
        system="Extract atomic, self-contained facts about alice.",
        messages=(Message.user(CONVERSATION),),
        max_tokens=2048,
        temperature=0.0,
    )


async def test_structured_call_sends_forced_tool_and_parses_observations(
    anthropic_model, recorded, observations_model
):
    model, replay = anthropic_model(recorded("anthropic/tool_use.json"))

    result = await structured(model, deriver_request(), observations_model)

    assert [o.source_index for o in result.observations] == [0, 2]
    assert result.observations[0].fact.startswith("Alice adopted a greyhound")
    [sent] = replay.requests
    assert sent.method == "POST"
    assert str(sent.url) == "https://api.anthropic.com/v1/messages"
    body = replay.bodies()[0]
    assert body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 2048,
        "system": "Extract atomic, self-contained facts about alice.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": CONVERSATION}]}],
        "tools": [
            {
                "name": "Observations",
                "description": "Atomic, self-contained facts about the target peer.",
                "input_schema": observations_model.model_json_schema(),
            }
        ],
        "tool_choice": {"type": "tool", "name": "Observations"},
    }
    # The API version this SDK targets has no sampling parameters.
    assert "temperature" not in body


async def test_headers_carry_version_and_key_and_no_sdk_retries(anthropic_model, recorded):
    model, replay = anthropic_model(recorded("anthropic/text.json"))

    await model.complete(deriver_request())

    headers = replay.requests[0].headers
    assert headers["anthropic-version"]
    # This SDK release sends API keys as a bearer credential.
    assert headers["authorization"] == "Bearer sk-ant-api03-test-key"
    assert headers["content-type"] == "application/json"
    assert headers["x-stainless-retry-count"] == "0"


async def test_base_url_is_honoured(anthropic_model, recorded):
    model, replay = anthropic_model(
        recorded("anthropic/text.json"), base_url="http://litellm.internal:4000/anthropic"
    )

    await model.complete(deriver_request())

    assert str(replay.requests[0].url) == "http://litellm.internal:4000/anthropic/v1/messages"


async def test_text_response_and_usage_accounting(anthropic_model, recorded, calls, spans):
    model, _ = anthropic_model(recorded("anthropic/text.json"))
    request = deriver_request().model_copy(update={"stage": Stage.SUMMARIZER})

    response = await model.complete(request)

    assert response.text.startswith("Alice, a night-shift nurse")
    assert response.tool_calls == ()
    assert response.stop_reason == "end_turn"
    assert response.model == "claude-haiku-4-5-20251001"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (402, 31)
    assert response.latency_ms == pytest.approx(250.0)  # one 0.25 s clock step
    usage = calls.ledger.stage(Stage.SUMMARIZER)
    assert (usage.calls, usage.failures, usage.retries) == (1, 0, 0)
    assert (usage.input_tokens, usage.output_tokens) == (402, 31)
    assert usage.latency_ms == pytest.approx(250.0)
    [span] = spans.get_finished_spans()
    assert span.name == "chat claude-haiku-4-5"
    assert span.attributes["gen_ai.system"] == "anthropic"
    assert span.attributes["gen_ai.request.model"] == "claude-haiku-4-5"
    assert span.attributes["mnemo.stage"] == "summarizer"
    assert span.attributes["gen_ai.usage.input_tokens"] == 402
    assert span.attributes["gen_ai.usage.output_tokens"] == 31


async def test_cached_prompt_tokens_count_as_input(anthropic_model, recorded):
    model, _ = anthropic_model(recorded("anthropic/tool_use.json"))

    response = await model.complete(deriver_request())

    assert response.usage.input_tokens == 812 + 1024
    assert response.stop_reason == "tool_use"


async def test_rate_limit_is_retried_after_the_server_requested_wait(
    anthropic_model, recorded, sleeps, calls, spans
):
    model, replay = anthropic_model(recorded("anthropic/rate_limited_then_ok.json"))

    response = await model.complete(deriver_request())

    assert response.text == "Alice is a nurse."
    assert len(replay.requests) == 2
    # retry-after: 1 outweighs the first backoff step (0.5 s with jitter 0.5 -> 0.375 s).
    assert sleeps.waits == [1.0]
    usage = calls.ledger.stage(Stage.DERIVER)
    assert (usage.calls, usage.retries, usage.failures) == (1, 1, 0)
    assert spans.get_finished_spans()[0].attributes["mnemo.model.retries"] == 1


async def test_persistent_overload_raises_model_unavailable(
    anthropic_model, recorded, sleeps, calls, spans
):
    model, replay = anthropic_model(recorded("anthropic/overloaded.json"))

    with pytest.raises(ModelUnavailable) as raised:
        await model.complete(deriver_request())

    assert raised.value.attempts == 3
    assert "529" in raised.value.reason
    assert "overloaded_error" in raised.value.reason
    assert len(replay.requests) == 3
    assert sleeps.waits == [0.375, 0.75]  # exponential steps 0.5, 1.0 with jitter 0.5
    usage = calls.ledger.stage(Stage.DERIVER)
    assert (usage.calls, usage.failures, usage.retries) == (1, 1, 2)
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)
    [span] = spans.get_finished_spans()
    assert not span.status.is_ok


async def test_connection_errors_and_timeouts_are_retried(anthropic_model, recorded, sleeps):
    failures: list = [httpx2.ConnectError("refused"), httpx2.ReadTimeout("slow")]
    model, replay = anthropic_model([*failures, *recorded("anthropic/text.json")])

    response = await model.complete(deriver_request())

    assert response.stop_reason == "end_turn"
    assert len(replay.requests) == 3
    assert len(sleeps.waits) == 2


async def test_bad_request_is_rejected_without_retrying(anthropic_model, recorded, sleeps):
    model, replay = anthropic_model(recorded("anthropic/invalid_request.json"))

    with pytest.raises(ModelRejected) as raised:
        await model.complete(deriver_request())

    assert raised.value.status == 400
    assert "tool_use_id" in raised.value.reason
    assert len(replay.requests) == 1
    assert sleeps.waits == []


async def test_malformed_tool_input_is_fed_back_then_corrected(
    anthropic_model, recorded, observations_model, calls
):
    model, replay = anthropic_model(recorded("anthropic/malformed_then_corrected.json"))

    result = await structured(model, deriver_request(), observations_model)

    assert result.observations[0].source_span == "after my night shift at the hospital"
    first, second = replay.bodies()
    assert second["tools"] == first["tools"]
    assert second["tool_choice"] == {"type": "tool", "name": "Observations"}
    echoed, feedback = second["messages"][-2:]
    assert echoed == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_01Rk3Fq8XwN2mVt6Lp9Hs4Cd",
                "name": "Observations",
                "input": {
                    "observations": [
                        {"fact": "Alice works as a nurse on night shifts.", "source_index": "third"}
                    ]
                },
            }
        ],
    }
    [result_block] = feedback["content"]
    assert feedback["role"] == "user"
    assert result_block["type"] == "tool_result"
    assert result_block["tool_use_id"] == "toolu_01Rk3Fq8XwN2mVt6Lp9Hs4Cd"
    assert result_block["is_error"] is True
    assert "observations.0.source_index" in result_block["content"]
    assert "observations.0.source_span" in result_block["content"]
    assert calls.ledger.stage(Stage.DERIVER).input_tokens == 760 + 905


async def test_malformed_output_after_every_attempt(anthropic_model, recorded, observations_model):
    [malformed, _] = recorded("anthropic/malformed_then_corrected.json")
    model, replay = anthropic_model([malformed])

    with pytest.raises(MalformedOutput) as raised:
        await structured(model, deriver_request(), observations_model, attempts=2)

    assert raised.value.attempts == 2
    assert raised.value.tool == "Observations"
    assert "source_index" in raised.value.reason
    assert len(replay.requests) == 2


async def test_tool_results_are_sent_as_tool_result_blocks(anthropic_model, recorded):
    model, replay = anthropic_model(recorded("anthropic/text.json"))
    request = deriver_request().model_copy(
        update={
            "messages": (
                Message.user("What does alice do?"),
                Message.assistant(
                    "Searching.", ToolUseBlock(id="toolu_9", name="search", input={"q": "job"})
                ),
                Message.user(ToolResultBlock(tool_use_id="toolu_9", content="nurse")),
            )
        }
    )

    await model.complete(request)

    messages = replay.bodies()[0]["messages"]
    assert messages[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_9",
        "name": "search",
        "input": {"q": "job"},
    }
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "nurse", "is_error": False}
    ]
    assert "tools" not in replay.bodies()[0]
    assert "tool_choice" not in replay.bodies()[0]
