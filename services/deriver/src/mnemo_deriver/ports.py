"""What the deriver needs from outside."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from mnemo_deriver.batching import RepKey
from mnemo_deriver.turns import TurnLog
from mnemo_runtime.deadletters import Letter
from mnemo_schema.events import Envelope, MessagePosted

__all__ = ["DeadLetters", "GapRecords", "ObservationLog", "Progress", "Reread", "TurnLog"]


class ObservationLog(Protocol):
    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        """Append events in order; their positions once stored."""
        ...


class DeadLetters(Protocol):
    async def park(self, letter: Letter) -> int:
        """Keep work that could not be done, with the reason, for inspection and replay."""
        ...


class Progress(Protocol):
    """How far each representation's line has come, for the queue status.

    A representation's messages are derived in order, so two positions say it all: the newest
    message taken into work, and the newest done (derived or parked) with all before it.
    """

    async def taken(self, key: RepKey, seq: int, sessions: Sequence[str] = ()) -> None:
        """The representation's messages up to ``seq`` (in ``sessions``) are being derived."""
        ...

    async def done(
        self, key: RepKey, seq: int, observation_seq: int, sessions: Sequence[str] = ()
    ) -> None:
        """Its messages up to ``seq`` (in ``sessions``) are done; its newest observation is at
        ``observation_seq`` (0: none new), which readers see once the memory projection has
        applied it."""
        ...


class GapRecords(Protocol):
    """Where each workspace's gap begins (``mnemo_deriver.gaps``), kept across a crash or a
    hand-over of its partition."""

    async def load(self, partition: int) -> dict[str, int]:
        """The records of ``partition``'s workspaces: workspace -> position."""
        ...

    async def keep(self, workspace: str, partition: int, position: int) -> None:
        """Record (or move) ``workspace``'s gap at ``position``."""
        ...

    async def drop(self, workspace: str) -> None:
        """Nothing of ``workspace``'s gap is left."""
        ...


# Messages a re-read delivers, in log order; False when it is to stop.
Sink = Callable[[list[tuple[int, MessagePosted]]], Awaitable[bool]]


class Reread(Protocol):
    """One workspace's messages read again from the log, from a position on, in order."""

    async def start(self, partition: int, workspace: str, start: int, sink: Sink) -> None:
        """Read ``workspace``'s messages in ``partition`` from ``start`` on into ``sink``
        (replacing a re-read of it still running)."""
        ...

    async def stop(self, workspace: str) -> None:
        """Stop the re-read of ``workspace`` (none running: nothing happens)."""
        ...

    async def any_from(self, partition: int, workspace: str, start: int) -> bool:
        """Whether the log holds a message of ``workspace`` at or after ``start`` (those let go
        may have been erased since)."""
        ...
