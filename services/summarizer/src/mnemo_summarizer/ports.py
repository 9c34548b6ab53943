"""What the summarizer needs from outside."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mnemo_runtime.deadletters import Letter
from mnemo_schema.config import SummaryConfiguration
from mnemo_schema.events import Envelope
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import Stored, Turn


class SummaryLog(Protocol):
    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        """Append events in order; their positions once stored."""
        ...


@dataclass(frozen=True)
class SessionRecord:
    """What is stored about a session: its summary configuration, newest summaries, messages."""

    # Workspace configuration first, then the session's; later entries override earlier ones.
    configs: tuple[SummaryConfiguration | None, ...] = ()
    latest: dict[SummaryType, Stored] = field(default_factory=dict)
    # Messages after the older of the newest summaries and before the given position, by seq.
    messages: tuple[Turn, ...] = ()
    # The instructions its configuration (workspace, then session) gives the summarizer.
    instructions: str | None = None


class SessionHistory(Protocol):
    async def load(self, workspace: str, session_id: str, before_seq: int) -> SessionRecord:
        """The session as stored, with its messages older than ``before_seq``."""
        ...

    async def caught_up(self, workspace: str, seq: int) -> None:
        """Return once the stored messages include every one of the workspace before ``seq``;
        ``TimeoutError`` (an outage: tried again later) if that takes too long."""
        ...


class Progress(Protocol):
    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        """(workspace, session) -> (newest message counted, newest summary published, 0: none):
        every message of the session up to the first is done."""
        ...


class DeadLetters(Protocol):
    async def park(self, letter: Letter) -> int:
        """Keep work that could not be done, with the reason, for inspection and replay."""
        ...
