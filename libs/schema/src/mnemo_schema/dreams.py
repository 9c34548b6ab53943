"""Dream events: a representation is due for belief revision, a dream over it finished, and
dreams of an erased peer were erased.

A dream runs the deduction and induction specialists over one (observer, observed)
representation. Its edits are ordinary memory events (``ObservationWritten`` with
``origin="dreamer"``, ``ObservationDeleted``, ``PeerCardUpdated``); these two events frame them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import Field

from mnemo_schema import subjects
from mnemo_schema.envelope import Envelope
from mnemo_schema.ids import EntityId
from mnemo_schema.text import StorableText

# Stored form (any partition): the dreamer is not partitioned, dreams lock their representation.
DREAM_FILTER: Final = subjects.dream_filter()
DREAMER_DURABLE: Final = "dreamer"
DREAM_SCHEDULER_DURABLE: Final = "dreamer-schedule"

DreamReason = Literal["threshold", "requested"]


def dream_subject(workspace: str, observer: str, observed: str) -> str:
    """Subject of the dream events of one (observer, observed) representation."""
    return f"mnemo.evt.{workspace}.dream.{observer}.{observed}"


class DreamDue(Envelope):
    """A representation should be dreamt over once ``due_at`` has passed.

    ``threshold``: enough new explicit observations and enough time since the last dream;
    ``requested``: an API caller asked for it. A representation never dreams twice at once.
    """

    type: Literal["DreamDue"] = "DreamDue"
    observer: EntityId
    observed: EntityId
    reason: DreamReason
    due_at: datetime
    session_id: EntityId | None = None
    dream_type: StorableText = Field(default="omni", max_length=64)
    # Explicit observations the representation held when the dream was scheduled.
    explicit_count: int | None = Field(default=None, ge=0)

    def subject(self) -> str:
        return dream_subject(self.workspace, self.observer, self.observed)


class DreamCompleted(Envelope):
    """A dream finished: what it changed and what its model calls cost."""

    type: Literal["DreamCompleted"] = "DreamCompleted"
    observer: EntityId
    observed: EntityId
    due_event_id: str
    model: str = ""
    deductive_written: int = Field(default=0, ge=0)
    inductive_written: int = Field(default=0, ge=0)
    contradictions_written: int = Field(default=0, ge=0)
    deleted: int = Field(default=0, ge=0)
    card_updated: bool = False
    rejected: int = Field(default=0, ge=0)
    model_calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    duration_ms: float = Field(default=0.0, ge=0.0)

    def subject(self) -> str:
        return dream_subject(self.workspace, self.observer, self.observed)


class DreamsErased(Envelope):
    """Dreams that were due for a representation of an erased peer were erased with it: nothing
    of them is kept, in the projections or the log.

    The eraser publishes it for a ``DreamDue`` that lands after the erasure of its observer or
    observed peer (scheduled while the erasure ran), once it has erased that event from the log.
    ``due_event_ids``: the ``event_id`` of each erased ``DreamDue``.
    """

    type: Literal["DreamsErased"] = "DreamsErased"
    observer: EntityId
    observed: EntityId
    due_event_ids: list[str] = Field(default_factory=list)

    def subject(self) -> str:
        return dream_subject(self.workspace, self.observer, self.observed)
