"""The summarizer's test doubles shared by its tests."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_schema.events import Envelope
from mnemo_schema.summaries import SummaryUpdated


class Log:
    """The log as the summarizer writes to it: events in order, with their positions."""

    def __init__(self) -> None:
        self.events: list[Envelope] = []

    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        self.events.extend(events)
        return list(range(len(self.events) - len(events) + 1, len(self.events) + 1))

    def summaries(self) -> list[SummaryUpdated]:
        return [e for e in self.events if isinstance(e, SummaryUpdated)]


class Progress:
    """Each session's progress as recorded: (newest message counted, newest summary)."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], tuple[int, int]] = {}

    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        for key, (seq, summary) in sessions.items():
            old = self.sessions.get(key, (0, 0))
            self.sessions[key] = (max(old[0], seq), max(old[1], summary))
