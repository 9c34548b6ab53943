"""The summarizer's test doubles shared by its tests."""

from __future__ import annotations


class Progress:
    """Each session's progress as recorded: (newest message counted, newest summary)."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], tuple[int, int]] = {}

    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        for key, (seq, summary) in sessions.items():
            old = self.sessions.get(key, (0, 0))
            self.sessions[key] = (max(old[0], seq), max(old[1], summary))
