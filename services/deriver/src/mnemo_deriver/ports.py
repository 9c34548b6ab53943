"""What the deriver needs from outside."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mnemo_runtime.deadletters import Letter
from mnemo_runtime.memory.rules import Rejected
from mnemo_schema.events import Envelope
from mnemo_schema.observations import ObservationWritten


class ObservationLog(Protocol):
    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        """Append events in order; their positions once stored."""
        ...


class Grounding(Protocol):
    async def check(self, events: Sequence[ObservationWritten]) -> list[Rejected | None]:
        """The store's verdict on each observation (None: accepted)."""
        ...


class DeadLetters(Protocol):
    async def park(self, letter: Letter) -> int:
        """Keep work that could not be done, with the reason, for inspection and replay."""
        ...


class Progress(Protocol):
    async def started(self, units: dict[tuple[str, str, str, str], int]) -> None:
        """Work units (workspace, session, observer, observed) -> count, now in progress."""
        ...

    async def finished(
        self, units: dict[tuple[str, str, str, str], int], last_seq: int = 0
    ) -> None:
        """Work units that completed (or were parked); ``last_seq``: their newest observation."""
        ...

    async def requeued(self, units: dict[tuple[str, str, str, str], int]) -> None:
        """Work units handed back for redelivery."""
        ...
