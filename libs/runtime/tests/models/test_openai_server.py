"""The OpenAI-compatible provider against a local server speaking the wire format over HTTP.

The fake server (``openai_fakes``) refuses what the API refuses, so every exchange here (and in
the contract suite) also checks that the bodies Mnemo sends are valid chat-completions requests.
"""

from __future__ import annotations

import json

import httpx
import pytest
from openai_fakes import Behaviour, Script, Turn
from pydantic import SecretStr

from mnemo_runtime.models import (
    MalformedOutput,
    Message,
    ModelRejected,
    ModelRequest,
    ModelUnavailable,
    Stage,
    ToolResultBlock,
    ToolSpec,
    structured,
)
from mnemo_runtime.models.openai_provider import OpenAICompatibleModel
from mnemo_runtime.models.openai_wire import Completion

GOOD = {"observations": [{"fact": "Alice is a nurse.", "source_index": 0, "source_span": "nurse"}]}
SEARCH = ToolSpec(
    name="search",
    description="Search observations.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def ask() -> ModelRequest:
    return ModelRequest(
        stage=Stage.DERIVER,
        system="Extract facts about alice.",
        messages=(Message.user("[0] alice: I work as a nurse"),),
        max_tokens=300,
        temperature=0.0,
    )


@pytest.fixture
def server(fake_openai):
    def configure(*turns: Turn, **script) -> None:
        fake_openai.reset(Script(turns=list(turns), api_key="sk-local", **script))

    return configure


@pytest.fixture
def model(fake_openai, calls):
    def build(structured: str = "tools", key: str | None = "sk-local") -> OpenAICompatibleModel:
        return OpenAICompatibleModel(
            "llama3.1:8b",
            base_url=fake_openai.base_url,
            api_key=SecretStr(key) if key else None,
            structured=structured,
            calls=calls,
        )

    return build


async def post(fake_openai, body: dict) -> httpx.Response:
    async with httpx.AsyncClient(base_url=fake_openai.base_url) as http:
        return await http.post(
            "chat/completions", json=body, headers={"Authorization": "Bearer sk-local"}
        )


@pytest.mark.parametrize(
    ("messages", "extra", "says"),
    [
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "x", "content": "1"},
            ],
            {},
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "user", "content": "and?"},
            ],
            {},
            "must be followed by tool messages",
        ),
        ([{"role": "user", "content": "hi"}], {"tool_choice": "auto"}, "only allowed when"),
        (
            [{"role": "user", "content": "hi"}],
            {"response_format": {"type": "json_schema", "json_schema": {"name": "bad name"}}},
            "String should match pattern",
        ),
        ([{"role": "user", "content": "hi"}], {"tool_budget": 3}, "Extra inputs"),
    ],
)
async def test_the_server_refuses_what_the_api_refuses(fake_openai, server, messages, extra, says):
    server(Turn(text="never said"))

    reply = await post(fake_openai, {"model": "m", "messages": messages, **extra})

    assert reply.status_code == 400
    error = reply.json()["error"]
    assert says in error["message"]
    assert error["type"] == "invalid_request_error"


async def test_the_fake_answers_with_the_fields_of_a_recorded_completion(
    fake_openai, server, recorded
):
    server(Turn(tool="Observations", input=GOOD))
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "Observations", "parameters": {}}}],
        "tool_choice": {"type": "function", "function": {"name": "Observations"}},
    }

    fake = (await post(fake_openai, body)).json()
    [real] = recorded("openai/tool_call.json")

    real_body = real["body"]
    assert set(fake) <= set(real_body)
    assert set(fake["choices"][0]) <= set(real_body["choices"][0])
    fake_call = fake["choices"][0]["message"]["tool_calls"][0]
    assert set(fake_call) == set(real_body["choices"][0]["message"]["tool_calls"][0])
    assert isinstance(fake_call["function"]["arguments"], str)
    assert Completion.model_validate(fake).choices[0].finish_reason == "tool_calls"


async def test_json_schema_mode_sends_a_response_format_and_no_tools(
    fake_openai, server, model, observations_model
):
    server(Turn(tool="Observations", input=GOOD))

    result = await structured(model("json_schema"), ask(), observations_model)

    assert result.observations[0].fact == "Alice is a nurse."
    [body] = fake_openai.bodies()
    assert "tools" not in body and "tool_choice" not in body
    schema = observations_model.model_json_schema()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Observations", "schema": schema},
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "one JSON object, the input of the tool `Observations`" in body["messages"][0]["content"]


async def test_a_server_ignoring_the_schema_is_read_when_it_wraps_the_json(
    server, model, observations_model
):
    server(Turn(tool="Observations", input=GOOD), behaviour=Behaviour.IGNORES_SCHEMA)

    result = await structured(model("json_schema"), ask(), observations_model)

    assert result.observations[0].source_span == "nurse"


async def test_a_server_ignoring_the_schema_gets_prose_fed_back_until_it_complies(
    fake_openai, server, model, observations_model
):
    server(
        Turn(text="Alice is a nurse, I think."),
        Turn(tool="Observations", input=GOOD),
        behaviour=Behaviour.IGNORES_SCHEMA,
    )

    result = await structured(model("json_schema"), ask(), observations_model)

    assert result.observations[0].fact == "Alice is a nurse."
    second = fake_openai.bodies()[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "{}"}
    assert second[-1]["role"] == "user"
    assert "Invalid input: arguments are not a JSON object: not JSON" in second[-1]["content"]


async def test_a_server_that_never_complies_ends_in_malformed_output(
    fake_openai, server, model, observations_model
):
    server(*[Turn(text="Alice is a nurse.")] * 3, behaviour=Behaviour.IGNORES_SCHEMA)

    with pytest.raises(MalformedOutput) as raised:
        await structured(model("json_schema"), ask(), observations_model, attempts=3)

    assert raised.value.attempts == 3
    assert len(fake_openai.exchanges) == 3


async def test_a_server_ignoring_tools_is_nudged_then_given_up_on(
    fake_openai, server, model, observations_model
):
    server(*[Turn(tool="Observations", input=GOOD)] * 2, behaviour=Behaviour.IGNORES_TOOLS)

    with pytest.raises(MalformedOutput) as raised:
        await structured(model("tools"), ask(), observations_model, attempts=2)

    assert "no call to Observations" in raised.value.reason
    assert fake_openai.bodies()[1]["messages"][-1] == {
        "role": "user",
        "content": "Answer by calling the Observations tool.",
    }


async def test_a_tool_loop_in_json_schema_mode(fake_openai, server, model):
    server(Turn(tool="search", input={"q": "job"}), Turn(text="Alice is a nurse."))
    chat = model("json_schema")
    request = ask().model_copy(update={"tools": (SEARCH,), "stage": Stage.DIALECTIC_LOW})

    first = await chat.complete(request)
    [call] = first.tool_calls
    follow_up = request.model_copy(
        update={
            "messages": (
                *request.messages,
                first.to_message(),
                Message.user(ToolResultBlock(tool_use_id=call.id, content="works as a nurse")),
            )
        }
    )
    second = await chat.complete(follow_up)

    assert (call.name, call.input, first.stop_reason) == ("search", {"q": "job"}, "tool_use")
    assert second.text == "Alice is a nurse."
    schema = fake_openai.bodies()[0]["response_format"]["json_schema"]["schema"]
    assert [b["properties"].get("tool", {}).get("const") for b in schema["anyOf"]] == [
        "search",
        None,
    ]
    turns = fake_openai.bodies()[1]["messages"]
    assert json.loads(turns[2]["content"]) == {"tool": "search", "input": {"q": "job"}}
    assert turns[3] == {
        "role": "user",
        "content": f"Result of search ({call.id}):\nworks as a nurse",
    }


async def test_a_wrong_key_is_rejected_without_retrying(fake_openai, server, model, sleeps):
    server(Turn(text="never said"))

    with pytest.raises(ModelRejected) as raised:
        await model(key="sk-wrong").complete(ask())

    assert raised.value.status == 401
    assert len(fake_openai.exchanges) == 1
    assert sleeps.waits == []


async def test_rate_limits_are_waited_out_and_outages_reported(fake_openai, server, model, sleeps):
    server(Turn(text="Alice is a nurse."), failures=[(429, {"retry-after": "3"})])

    response = await model().complete(ask())

    assert response.text == "Alice is a nurse."
    assert sleeps.waits == [3.0]
    server(failures=[(503, {})] * 3)
    with pytest.raises(ModelUnavailable) as raised:
        await model().complete(ask())
    assert raised.value.reason.startswith("503")
