"""``ChatModel`` on the Anthropic Messages API through the official ``anthropic`` client.

The SDK's own retries and tracing are switched off: ``CallRuntime`` retries, traces and accounts
every provider the same way, and a retry the SDK hid would be missing from the usage ledger.
The SDK speaks ``httpx2``, so an injected transport must be an ``httpx2`` one. The API version
it targets takes no sampling parameters, so ``ModelRequest.temperature`` is not sent.
"""

from __future__ import annotations

import anthropic
import httpx2
from anthropic import AsyncAnthropic, omit
from anthropic.types import (
    ContentBlockParam,
    MessageParam,
    TextBlock,
    ToolChoiceParam,
    ToolParam,
    ToolUseBlock,
)
from anthropic.types import Message as AnthropicMessage
from pydantic import SecretStr

from mnemo_runtime.models.calls import CallRuntime, ProviderModel, Transient, retry_after_s
from mnemo_runtime.models.ports import (
    ContentBlock,
    Message,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolChoice,
    Usage,
)
from mnemo_runtime.models.ports import TextBlock as PortText
from mnemo_runtime.models.ports import ToolUseBlock as PortToolUse

# 408 and 409 are the API's "try again" statuses (request timeout, lock contention); 529 is
# "overloaded" and, like every 5xx, passes with time.
_RETRYABLE_STATUSES = frozenset({408, 409, 429})

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}


class AnthropicModel(ProviderModel):
    """Claude through the Messages API, or any Anthropic-compatible server via ``base_url``."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: SecretStr,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        transport: httpx2.AsyncBaseTransport | None = None,
        calls: CallRuntime | None = None,
    ) -> None:
        super().__init__(model, calls)
        http_client = (
            httpx2.AsyncClient(transport=transport, timeout=timeout_s) if transport else None
        )
        self._client = AsyncAnthropic(
            api_key=api_key.get_secret_value(),
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client,
            open_telemetry=False,
        )

    async def aclose(self) -> None:
        """Close the underlying HTTP connections."""
        await self._client.close()

    async def _once(self, request: ModelRequest) -> ModelResponse:
        try:
            message = await self._client.messages.create(
                model=self.model,
                max_tokens=request.max_tokens,
                messages=[_message_param(m) for m in request.messages],
                system=request.system or omit,
                tools=[_tool_param(t.name, t.description, t.input_schema) for t in request.tools]
                or omit,
                tool_choice=_tool_choice(request.tool_choice) if request.tools else omit,
            )
        except anthropic.APIConnectionError as exc:  # includes timeouts
            raise Transient(f"{type(exc).__name__}: {exc.message}") from exc
        except anthropic.APIStatusError as exc:
            status = exc.status_code
            reason = f"{status} {exc.type or ''}: {exc.api_message or exc.message}"
            if status in _RETRYABLE_STATUSES or status >= 500:
                raise Transient(reason, retry_after_s=retry_after_s(exc.response.headers)) from exc
            raise ModelRejected(reason, status=status) from exc
        return _response(message)


def _message_param(message: Message) -> MessageParam:
    content = [_block_param(b) for b in message.content]
    if message.role == "user":
        return {"role": "user", "content": content}
    return {"role": "assistant", "content": content}


def _block_param(block: ContentBlock) -> ContentBlockParam:
    if isinstance(block, PortText):
        return {"type": "text", "text": block.text}
    if isinstance(block, PortToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def _tool_param(name: str, description: str, schema: dict[str, object]) -> ToolParam:
    return {"name": name, "description": description, "input_schema": schema}


def _tool_choice(choice: ToolChoice) -> ToolChoiceParam:
    if choice.mode == "tool" and choice.name is not None:
        return {"type": "tool", "name": choice.name}
    if choice.mode == "any":
        return {"type": "any"}
    if choice.mode == "none":
        return {"type": "none"}
    return {"type": "auto"}


def _response(message: AnthropicMessage) -> ModelResponse:
    usage = message.usage
    # Cached prompt tokens are reported apart from input_tokens; the ledger counts every prompt
    # token the call consumed.
    prompt_tokens = (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    return ModelResponse(
        text="".join(b.text for b in message.content if isinstance(b, TextBlock)),
        tool_calls=tuple(
            ToolCall(id=b.id, name=b.name, input=dict(b.input))
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ),
        stop_reason=_STOP_REASONS.get(message.stop_reason or "", "other"),
        usage=Usage(input_tokens=prompt_tokens, output_tokens=usage.output_tokens),
        model=message.model,
    )
