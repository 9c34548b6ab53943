"""Schema-constrained output on any ``ChatModel``: one forced tool, validated by pydantic.

Forcing a tool whose input schema is the output model is the portable form of constrained
decoding: Anthropic and OpenAI-compatible servers both honour a forced tool, and the local
reasoner reads the same schema. Validation failures go back to the model as an erroring tool
result, which is how the model learns what to correct; a bounded number of attempts keeps a
confused model from burning tokens indefinitely.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from mnemo_runtime.models.ports import (
    ChatModel,
    MalformedOutput,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolChoice,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)

T = TypeVar("T", bound=BaseModel)

DEFAULT_ATTEMPTS = 3


async def structured(
    model: ChatModel,
    request: ModelRequest,
    output: type[T],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    tool_name: str | None = None,
) -> T:
    """An ``output`` from ``model``; invalid input is fed back, up to ``attempts`` tries."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    tool = ToolSpec.for_output(output, name=tool_name)
    current = request.model_copy(
        update={"tools": (tool,), "tool_choice": ToolChoice.force(tool.name)}
    )
    reason = ""
    for _ in range(attempts):
        response = await model.complete(current)
        call = next((c for c in response.tool_calls if c.name == tool.name), None)
        if call is None:
            reason = f"no call to {tool.name} (stop_reason={response.stop_reason})"
            turns = _nudge(response, tool)
        else:
            try:
                return _validate(call, output)
            except _Invalid as invalid:
                reason = invalid.reason
                turns = _reject(call, response, reason)
        current = current.model_copy(update={"messages": (*current.messages, *turns)})
    raise MalformedOutput(reason, tool=tool.name, attempts=attempts)


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _validate(call: ToolCall, output: type[T]) -> T:
    if call.malformed is not None:
        raise _Invalid(f"arguments are not a JSON object: {call.malformed}")
    try:
        return output.model_validate(call.input)
    except ValidationError as err:
        raise _Invalid(describe_validation_error(err)) from err


def describe_validation_error(err: ValidationError) -> str:
    """A compact, model-readable list of what failed where."""
    lines = []
    for e in err.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"]) or "(root)"
        lines.append(f"{where}: {e['msg']}")
    return "; ".join(lines)


def _reject(call: ToolCall, response: ModelResponse, reason: str) -> tuple[Message, ...]:
    # Echo only the call being rejected: every tool_use needs a matching tool_result, and any
    # other calls in the turn are irrelevant to the correction.
    echoed = Message.assistant(
        *([response.text] if response.text else []),
        ToolUseBlock(id=call.id, name=call.name, input=call.input),
    )
    feedback = Message.user(
        ToolResultBlock(
            tool_use_id=call.id,
            content=f"Invalid input: {reason}. Call {call.name} again with corrected input.",
            is_error=True,
        )
    )
    return echoed, feedback


def _nudge(response: ModelResponse, tool: ToolSpec) -> tuple[Message, ...]:
    # Without a tool_use there is no id to answer, so the correction is plain user text; an
    # assistant turn is echoed only when non-empty because providers reject empty turns.
    nudge = Message.user(f"Answer by calling the {tool.name} tool.")
    return (Message.assistant(response.text), nudge) if response.text else (nudge,)
