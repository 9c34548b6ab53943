"""The OpenAI chat-completions wire format: a ``ModelRequest`` as a body, a completion back.

Spoken over HTTP by OpenAI-compatible servers (vLLM, Ollama, llama.cpp's server, LiteLLM) and
in process by llama.cpp's embedded server, so both providers share this one mapping. Servers
differ in small ways (missing call ids, arguments as objects): those are absorbed here.

Two ways to ask for tool calls:

- ``tools``: the API's own ``tools`` / ``tool_choice``;
- ``json_schema``: ``response_format`` with a JSON schema, and the calls as JSON in the
  message content (``json_actions``), for servers and models whose tool calling is missing or
  unreliable but which constrain output to a schema.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel

from mnemo_runtime.models import json_actions
from mnemo_runtime.models.ports import (
    Message,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

StructuredMode = Literal["tools", "json_schema"]

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class _Function(BaseModel):
    name: str
    # The API sends a JSON string; some servers send the object itself.
    arguments: str | dict[str, Any] = "{}"


class _ToolCall(BaseModel):
    id: str | None = None
    function: _Function


class _Message(BaseModel):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Completion(BaseModel):
    """The fields of a chat completion that Mnemo reads."""

    model: str = ""
    choices: list[_Choice]
    usage: _Usage | None = None


def chat_body(request: ModelRequest, model: str, mode: StructuredMode) -> dict[str, Any]:
    """The chat-completions request body for ``request``."""
    body: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    fmt = json_actions.action_format(request) if mode == "json_schema" else None
    if fmt is not None:
        body["messages"] = json_actions.render(request, fmt)
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": fmt.name, "schema": fmt.schema},
        }
        return body
    body["messages"] = _messages(request)
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
        body["tool_choice"] = _tool_choice(request.tool_choice)
    return body


def response(
    completion: Completion, request: ModelRequest, model: str, mode: StructuredMode
) -> ModelResponse:
    """The model's turn in ``completion`` (which has at least one choice)."""
    choice = completion.choices[0]
    usage = completion.usage or _Usage()
    stop_reason = _STOP_REASONS.get(choice.finish_reason or "", "other")
    text = choice.message.content or ""
    calls = tuple(_tool_call(c, i) for i, c in enumerate(choice.message.tool_calls or []))
    fmt = json_actions.action_format(request) if mode == "json_schema" else None
    if fmt is not None and not calls:
        text, calls = json_actions.decode(text, fmt, json_actions.call_id(request))
        if calls and stop_reason == "end_turn":
            stop_reason = "tool_use"
    return ModelResponse(
        text=text,
        tool_calls=calls,
        stop_reason=stop_reason,
        usage=Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens),
        model=completion.model or model,
    )


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": request.system})
    for message in request.messages:
        wire.extend(_assistant(message) if message.role == "assistant" else _user(message))
    return wire


def _assistant(message: Message) -> list[dict[str, Any]]:
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.input)},
        }
        for b in message.content
        if isinstance(b, ToolUseBlock)
    ]
    wire: dict[str, Any] = {"role": "assistant", "content": message.text() or None}
    if calls:
        wire["tool_calls"] = calls
    return [wire]


def _user(message: Message) -> list[dict[str, Any]]:
    # Tool results become "tool" messages, which must directly follow the assistant's calls, so
    # they go before any user text of the same turn. The API has no error flag; say it in words.
    wire: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": b.tool_use_id,
            "content": f"Error: {b.content}" if b.is_error else b.content,
        }
        for b in message.content
        if isinstance(b, ToolResultBlock)
    ]
    if text := message.text():
        wire.append({"role": "user", "content": text})
    return wire


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return {"auto": "auto", "any": "required", "none": "none"}[choice.mode]


def _tool_call(call: _ToolCall, index: int) -> ToolCall:
    call_id = call.id or f"call_{index}"
    arguments = call.function.arguments
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, name=call.function.name, input=arguments)
    try:
        decoded = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolCall(id=call_id, name=call.function.name, input={}, malformed=str(exc))
    if not isinstance(decoded, dict):
        malformed = f"decoded to {type(decoded).__name__}"
        return ToolCall(id=call_id, name=call.function.name, input={}, malformed=malformed)
    return ToolCall(id=call_id, name=call.function.name, input=decoded)
