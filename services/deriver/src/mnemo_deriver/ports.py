"""What the deriver needs from outside."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mnemo_deriver.batching import RepKey
from mnemo_deriver.turns import TurnLog
from mnemo_runtime.deadletters import Letter
from mnemo_schema.events import Envelope

__all__ = ["DeadLetters", "ObservationLog", "Progress", "TurnLog"]


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
