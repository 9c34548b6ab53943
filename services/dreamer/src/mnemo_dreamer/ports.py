"""What the dreamer needs from the world: the representation, the log, the schedule, a lock."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from mnemo_dreamer.domain import Schedule
from mnemo_runtime.vectors.ports import Scope
from mnemo_schema.config import WorkspaceConfiguration
from mnemo_schema.envelope import Envelope
from mnemo_schema.grounding import Rejected
from mnemo_schema.observations import ObservationWritten


@dataclass(frozen=True)
class Observation:
    """A live observation as the specialists see it."""

    id: str
    level: str
    content: str
    created_at: datetime
    premise_ids: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    needs_review: bool = False
    confidence: float | None = None
    pattern_type: str | None = None


@dataclass(frozen=True)
class SourceMessage:
    id: str
    peer_id: str
    content: str
    created_at: datetime


class Memory(Protocol):
    """The representation store, read through its key, and its write-time check."""

    async def recent(
        self, scope: Scope, limit: int, levels: Sequence[str] = ()
    ) -> list[Observation]: ...

    async def get(self, scope: Scope, ids: Sequence[str]) -> list[Observation]: ...

    async def similar(
        self, scope: Scope, query: str, limit: int, levels: Sequence[str] = ()
    ) -> list[Observation]: ...

    async def sources(self, scope: Scope, message_ids: Sequence[str]) -> list[SourceMessage]: ...

    async def card(self, scope: Scope) -> list[str] | None: ...

    async def configuration(
        self, workspace: str, session_id: str | None = None
    ) -> WorkspaceConfiguration:
        """The configuration in force for a dream: the workspace's (and the session's, for a
        dream asked for in a session)."""
        ...

    async def check(self, events: Sequence[ObservationWritten]) -> list[Rejected | None]: ...

    async def wait_applied(self, workspace: str, seq: int, timeout: float) -> bool:
        """Wait until the memory projection has applied stream position ``seq`` (an event of
        ``workspace``)."""
        ...


class Publisher(Protocol):
    async def publish(self, events: Sequence[Envelope]) -> list[int]: ...


class ScheduleStore(Protocol):
    """The ``dream_schedule`` table: the schedule survives restarts there, not in memory."""

    async def count_explicit(
        self, scope: Scope, seqs: Sequence[int], now: datetime
    ) -> Schedule | None:
        """Count the explicit observations at stream positions ``seqs`` (ascending) that are not
        counted yet, made by ``now`` (``domain.on_explicit``), in one step; the schedule after
        them, or None when none was new."""
        ...

    async def load(self, scope: Scope) -> Schedule: ...

    async def forget(self, scope: Scope) -> None:
        """Drop the representation's schedule: it was erased with its peer or workspace."""
        ...

    async def ready(self, now: datetime) -> list[Schedule]:
        """Representations whose pending dream may start now and has no DreamDue yet."""
        ...

    async def mark_published(self, scope: Scope, due_event_id: str) -> None: ...

    async def complete(self, scope: Scope, now: datetime, explicit_seen: int) -> None: ...

    def lock(self, scope: Scope) -> AbstractAsyncContextManager[bool]:
        """Hold the representation's dream lock; yields False when another dream holds it."""
        ...
