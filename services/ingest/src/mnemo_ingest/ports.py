"""What ingest needs from the outside world."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Protocol

from mnemo_schema.events import Envelope, Event


class EventLog(Protocol):
    """The append-only event log."""

    async def append(self, events: Sequence[Envelope]) -> Awaitable[list[int]]:
        """Queue ``events`` in order; the awaitable gives their positions once stored."""
        ...

    async def entity_history(self, workspace: str) -> list[tuple[int, Event]]:
        """Every entity event of ``workspace`` with its position, oldest first."""
        ...

    async def last_seq(self, workspace: str) -> int:
        """Position of the newest entity or message event of ``workspace`` (0: none)."""
        ...


class MessageDirectory(Protocol):
    """Looks up whether a message exists (read side)."""

    async def session_of(self, workspace: str, message_id: str) -> str | None:
        """The session holding ``message_id``, or None."""
        ...

    async def conclusion_exists(
        self, workspace: str, conclusion_id: str, observer: str, observed: str
    ) -> bool:
        """Whether a live conclusion with that id is in the (observer, observed) model."""
        ...


class Tokenizer(Protocol):
    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token count of each text."""
        ...
