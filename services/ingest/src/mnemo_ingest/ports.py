"""What ingest needs from the outside world."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from mnemo_schema.events import Envelope, Event
from mnemo_schema.keys import KeyRevoked


class EventLog(Protocol):
    """The append-only event log."""

    async def append(self, events: Sequence[Envelope | KeyRevoked]) -> Awaitable[list[int]]:
        """Queue ``events`` in order; the awaitable gives their positions once stored."""
        ...

    async def entity_history(self, workspace: str) -> list[tuple[int, Event]]:
        """Every entity event of ``workspace`` with its position, oldest first."""
        ...

    async def last_seq(self, workspace: str) -> int:
        """Position of the newest entity or message event of ``workspace`` (0: none)."""
        ...


@dataclass(frozen=True)
class StoredMessage:
    """A message as the read side holds it: what a copy of it needs."""

    message_id: str
    peer_id: str
    content: str
    created_at: datetime
    token_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionCopy:
    """What a clone copies from its source session, messages in conversation order."""

    metadata: dict[str, Any]
    configuration: dict[str, Any]
    messages: list[StoredMessage]


class MessageDirectory(Protocol):
    """Looks up whether a message exists, and what a session holds (read side)."""

    async def session_of(self, workspace: str, message_id: str) -> str | None:
        """The session holding ``message_id``, or None."""
        ...

    async def conclusion_exists(
        self, workspace: str, conclusion_id: str, observer: str, observed: str
    ) -> bool:
        """Whether a live conclusion with that id is in the (observer, observed) model."""
        ...

    async def session_copy(self, workspace: str, session_id: str, applied: int) -> SessionCopy:
        """The session's metadata, configuration and messages once the read side has applied
        log position ``applied``; raises ``Refusal`` (503) if it does not in time."""
        ...


class Tokenizer(Protocol):
    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token count of each text."""
        ...
