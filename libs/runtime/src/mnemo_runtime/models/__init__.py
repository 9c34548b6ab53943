"""The model port and its providers: Anthropic, OpenAI-compatible, scripted and record/replay."""

from mnemo_runtime.models.calls import CallRuntime, RetryPolicy
from mnemo_runtime.models.ports import (
    ChatModel,
    ContentBlock,
    LocalModelFactory,
    MalformedOutput,
    Message,
    ModelError,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Stage,
    StopReason,
    TextBlock,
    ToolCall,
    ToolChoice,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from mnemo_runtime.models.structured import structured
from mnemo_runtime.models.usage import StageUsage, UsageLedger

__all__ = [
    "CallRuntime",
    "ChatModel",
    "ContentBlock",
    "LocalModelFactory",
    "MalformedOutput",
    "Message",
    "ModelError",
    "ModelRejected",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "RetryPolicy",
    "Stage",
    "StageUsage",
    "StopReason",
    "TextBlock",
    "ToolCall",
    "ToolChoice",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Usage",
    "UsageLedger",
    "structured",
]
