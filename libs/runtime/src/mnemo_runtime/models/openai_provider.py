"""``ChatModel`` on an OpenAI-compatible chat-completions endpoint (vLLM, Ollama, LiteLLM).

Plain httpx rather than an SDK: these servers implement a common subset of the API, and owning
the few fields we use keeps their differences (missing ids, arguments as objects) in one place.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import BaseModel, SecretStr, ValidationError

from mnemo_runtime.models.calls import CallRuntime, Transient, retry_after_s
from mnemo_runtime.models.ports import (
    Message,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

PROVIDER = "openai"

_RETRYABLE_STATUSES = frozenset({408, 409, 429})

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


class _Completion(BaseModel):
    model: str = ""
    choices: list[_Choice]
    usage: _Usage | None = None


class OpenAICompatibleModel:
    """A model served behind ``{base_url}/chat/completions``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: SecretStr | None = None,
        timeout_s: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
        calls: CallRuntime | None = None,
    ) -> None:
        self.model = model
        self._calls = calls or CallRuntime()
        # Local servers (Ollama, vLLM) usually run without a key; send none rather than a dummy.
        headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One chat-completions call, retried on transient failures and accounted by stage."""
        return await self._calls.call(
            provider=PROVIDER,
            model=self.model,
            request=request,
            attempt=lambda: self._once(request),
        )

    async def aclose(self) -> None:
        """Close the underlying HTTP connections."""
        await self._http.aclose()

    async def _once(self, request: ModelRequest) -> ModelResponse:
        try:
            reply = await self._http.post("chat/completions", json=self._body(request))
        except httpx.TransportError as exc:  # includes timeouts and refused connections
            raise Transient(f"{type(exc).__name__}: {exc}") from exc
        status = reply.status_code
        if status >= 400:
            reason = f"{status}: {reply.text[:500]}"
            if status in _RETRYABLE_STATUSES or status >= 500:
                raise Transient(reason, retry_after_s=retry_after_s(reply.headers))
            raise ModelRejected(reason, status=status)
        try:
            completion = _Completion.model_validate_json(reply.content)
        except ValidationError as exc:
            raise ModelRejected(f"unreadable completion: {exc}", status=status) from exc
        if not completion.choices:
            raise ModelRejected("completion has no choices", status=status)
        return _response(completion, self.model)

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(request),
            "max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
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


def _response(completion: _Completion, requested_model: str) -> ModelResponse:
    choice = completion.choices[0]
    usage = completion.usage or _Usage()
    return ModelResponse(
        text=choice.message.content or "",
        tool_calls=tuple(_tool_call(c, i) for i, c in enumerate(choice.message.tool_calls or [])),
        stop_reason=_STOP_REASONS.get(choice.finish_reason or "", "other"),
        usage=Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens),
        model=completion.model or requested_model,
    )


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
