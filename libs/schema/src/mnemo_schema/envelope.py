"""The envelope every event carries."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from mnemo_schema import subjects
from mnemo_schema.ids import EntityId, new_event_id
from mnemo_schema.text import StorableText


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class Envelope(BaseModel):
    """Fields every event carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: str = Field(default_factory=new_event_id)
    schema_version: int = 1
    occurred_at: datetime = Field(default_factory=utcnow)
    workspace: EntityId
    correlation_id: StorableText | None = None
    causation_id: StorableText | None = None
    # W3C trace context (traceparent / tracestate) of the request that caused the event.
    trace: dict[str, str] = Field(default_factory=dict)

    def subject(self) -> str:
        """The subject this event is published on."""
        return subjects.entity_subject(self.workspace, "workspace")
