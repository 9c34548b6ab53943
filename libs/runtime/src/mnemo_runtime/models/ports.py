"""The model port: one tool-using conversation turn, provider-neutral.

Every implementation (Anthropic, OpenAI-compatible, the deterministic local reasoner, scripted and
record/replay test doubles) implements ``ChatModel`` and speaks only these types, so stages never
see a provider SDK or a provider exception.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Stage(StrEnum):
    """The pipeline stages that call a model; each is configured and accounted separately."""

    DERIVER = "deriver"
    SUMMARIZER = "summarizer"
    DREAMER_DEDUCTION = "dreamer_deduction"
    DREAMER_INDUCTION = "dreamer_induction"
    DIALECTIC_MINIMAL = "dialectic_minimal"
    DIALECTIC_LOW = "dialectic_low"
    DIALECTIC_MEDIUM = "dialectic_medium"
    DIALECTIC_HIGH = "dialectic_high"
    DIALECTIC_MAX = "dialectic_max"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(_Frozen):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Frozen):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


ContentBlock = Annotated[TextBlock | ToolUseBlock | ToolResultBlock, Field(discriminator="type")]


class Message(_Frozen):
    """One conversation turn: user turns carry text and tool results, assistant turns tool calls."""

    role: Literal["user", "assistant"]
    content: tuple[ContentBlock, ...]

    @classmethod
    def user(cls, *content: str | ContentBlock) -> Message:
        """A user turn; plain strings become text blocks."""
        return cls(role="user", content=_blocks(content))

    @classmethod
    def assistant(cls, *content: str | ContentBlock) -> Message:
        """An assistant turn; plain strings become text blocks."""
        return cls(role="assistant", content=_blocks(content))

    def text(self) -> str:
        """The concatenated text blocks of this turn."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


def _blocks(content: tuple[str | ContentBlock, ...]) -> tuple[ContentBlock, ...]:
    return tuple(TextBlock(text=c) if isinstance(c, str) else c for c in content)


class ToolSpec(_Frozen):
    """A tool the model may call; ``input_schema`` is a JSON schema for the call's input."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str
    input_schema: dict[str, Any]

    @classmethod
    def for_output(
        cls, output: type[BaseModel], *, name: str | None = None, description: str | None = None
    ) -> ToolSpec:
        """A tool whose input is exactly the pydantic model ``output``."""
        doc = (output.__doc__ or "").strip().splitlines()
        return cls(
            name=name or output.__name__,
            description=description or (doc[0] if doc else f"Return a {output.__name__}."),
            input_schema=copy.deepcopy(_schema(output)),
        )


@functools.cache
def _schema(output: type[BaseModel]) -> dict[str, Any]:
    """``output``'s JSON schema, generated once per model. Generated for every call (0.27 ms
    for the deriver's output, against 0.02 ms to copy it), it held 53 % of the memory process's
    busy samples while it caught up on a backlog of small batches."""
    return output.model_json_schema()


class ToolChoice(_Frozen):
    """Whether the model may, must, or must not call tools; ``tool`` forces the named one."""

    mode: Literal["auto", "any", "tool", "none"] = "auto"
    name: str | None = None

    @classmethod
    def force(cls, name: str) -> ToolChoice:
        """Require a call to the tool called ``name``."""
        return cls(mode="tool", name=name)

    @model_validator(mode="after")
    def _name_iff_forced(self) -> Self:
        if (self.mode == "tool") != (self.name is not None):
            raise ValueError("a tool name is given exactly when mode is 'tool'")
        return self


def with_instructions(system: str, instructions: str | None) -> str:
    """A stage's system prompt followed by the application's instructions, when it gives some
    (from its configuration's ``custom_instructions``); the stage's own rules still hold."""
    if not instructions:
        return system
    return (
        f"{system}\n\nThe application using this memory adds these instructions (they refine"
        " the task; the rules above still hold):\n<instructions>\n"
        f"{instructions}\n</instructions>"
    )


class ModelRequest(_Frozen):
    """Everything a provider needs for one turn; hashable as JSON for record/replay."""

    stage: Stage
    system: str = ""
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = ToolChoice()
    max_tokens: int = Field(default=1024, gt=0)
    # Sent only to providers whose API has sampling control (OpenAI-compatible servers).
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)

    def forced_tool(self) -> ToolSpec | None:
        """The tool the model must call, when the request forces one."""
        if self.tool_choice.mode != "tool":
            return None
        return next((t for t in self.tools if t.name == self.tool_choice.name), None)


class ToolCall(_Frozen):
    """A tool call the model made.

    ``malformed`` says why the provider could not decode the call's arguments (some
    OpenAI-compatible servers emit broken JSON); ``input`` is then empty.
    """

    id: str
    name: str
    input: dict[str, Any]
    malformed: str | None = None


class Usage(_Frozen):
    input_tokens: int = 0
    output_tokens: int = 0


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "other"]


class ModelResponse(_Frozen):
    """The model's turn, with what it cost."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: StopReason = "end_turn"
    usage: Usage = Usage()
    latency_ms: float = 0.0
    model: str = ""

    def to_message(self) -> Message:
        """This turn as an assistant message, to continue the conversation."""
        blocks: list[ContentBlock] = [TextBlock(text=self.text)] if self.text else []
        blocks += [ToolUseBlock(id=c.id, name=c.name, input=c.input) for c in self.tool_calls]
        return Message(role="assistant", content=tuple(blocks))


class ChatModel(Protocol):
    """A model that takes one conversation turn, possibly calling tools."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The model's next turn for ``request``."""
        ...


# The deterministic local reasoner lives outside this package; configuration builds it through a
# factory of this shape so the runtime library does not depend on it.
LocalModelFactory = Callable[[Stage], ChatModel]


class ModelError(Exception):
    """Base of the errors a ``ChatModel`` raises; stages catch these, never provider errors."""


class ModelUnavailable(ModelError):
    """The provider kept failing transiently (429, 5xx, timeouts) until retries ran out."""

    def __init__(self, reason: str, *, attempts: int) -> None:
        super().__init__(f"model unavailable after {attempts} attempt(s): {reason}")
        self.reason = reason
        self.attempts = attempts


class ModelRejected(ModelError):
    """The provider refused the request (bad request, auth); retrying cannot help."""

    def __init__(self, reason: str, *, status: int | None = None) -> None:
        super().__init__(f"model rejected the request ({status}): {reason}")
        self.reason = reason
        self.status = status


class MalformedOutput(ModelError):
    """The model's structured output stayed invalid after every corrective attempt."""

    def __init__(self, reason: str, *, tool: str, attempts: int) -> None:
        super().__init__(f"malformed {tool} output after {attempts} attempt(s): {reason}")
        self.reason = reason
        self.tool = tool
        self.attempts = attempts
