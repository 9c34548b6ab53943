"""Chat queries to the dialectic and its replies, shaped as the Honcho v3 API answers them.

The gateway sends a ``ChatQuery`` on ``mnemo.qry.<workspace>.chat``; the dialectic replies with a
``ChatAnswer`` or, streamed, a sequence of ``ChatChunk`` ending with one whose ``done`` is set.
``Evidence`` parses as the SDK's ``honcho.api_types.Evidence``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from mnemo_schema.answer_format import ResponseFormat
from mnemo_schema.context_queries import Sessions, allowed_sessions
from mnemo_schema.ids import EntityId
from mnemo_schema.text import QueryText, StorableText

ReasoningLevel = Literal["minimal", "low", "medium", "high", "max"]
REASONING_LEVELS: tuple[ReasoningLevel, ...] = get_args(ReasoningLevel)
ConclusionLevel = Literal["explicit", "deductive", "inductive", "contradiction"]


class _Question(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Restricts the messages read to one session (and to ``sessions``), the observations to
    # those resting on them alone.
    session_id: EntityId | None = None
    sessions: Sessions = None
    query: QueryText = Field(min_length=1, max_length=10_000)
    reasoning_level: ReasoningLevel = "low"
    include_evidence: bool = False
    response_format: ResponseFormat | None = None
    """A JSON Schema the answer must match: ``content`` is then a JSON text of that shape."""
    # The application's instructions for answering (its configuration's), added to the prompt.
    instructions: StorableText | None = None

    @property
    def allowed(self) -> frozenset[str] | None:
        """The sessions the answer may draw on (None: all)."""
        return allowed_sessions(self.session_id, self.sessions)


class ChatQuery(_Question):
    """A question ``observer`` asks about ``observed``, answered only from that representation."""

    KIND: ClassVar[str] = "chat"
    observer: EntityId
    observed: EntityId


class WorkspaceChatQuery(_Question):
    """A question about the whole workspace, answered from every peer's messages and
    self-representation (on ``mnemo.qry.<workspace>.chat_workspace``)."""

    KIND: ClassVar[str] = "chat_workspace"
    observer: None = None
    observed: None = None


class EvidenceObservation(BaseModel):
    """A conclusion the dialectic read while answering."""

    id: str
    level: ConclusionLevel
    content: str
    created_at: datetime
    session_id: str | None = None
    observer_id: str | None = None
    observed_id: str | None = None
    source_ids: list[str] = Field(default_factory=list)


class EvidenceMessageRef(BaseModel):
    """A message the dialectic read while answering (identity only, no content)."""

    id: str
    session_id: str
    peer_id: str
    created_at: datetime


class EvidenceToolCall(BaseModel):
    """A tool the dialectic invoked successfully while answering."""

    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)


class Evidence(BaseModel):
    """What the dialectic read and did: collated from its reads, not reported by the model."""

    conclusions: list[EvidenceObservation] = Field(default_factory=list)
    messages: list[EvidenceMessageRef] = Field(default_factory=list)
    tool_calls: list[EvidenceToolCall] = Field(default_factory=list)
    reasoning_trace_id: str | None = None


class Citations(BaseModel):
    """The observations and messages the answer itself cites (a subset of what was read)."""

    observation_ids: list[str] = Field(default_factory=list)
    message_ids: list[str] = Field(default_factory=list)


class ChatAnswer(BaseModel):
    """The dialectic's answer; ``content`` is None when it had nothing to say."""

    content: str | None
    evidence: Evidence | None = None
    citations: Citations = Field(default_factory=Citations)


class ChatDelta(BaseModel):
    content: str | None = None


class ChatChunk(BaseModel):
    """One streamed piece of an answer; the last one has ``done`` and, if asked, the evidence."""

    delta: ChatDelta = Field(default_factory=ChatDelta)
    done: bool = False
    evidence: Evidence | None = None
    citations: Citations | None = None
