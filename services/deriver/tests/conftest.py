"""The deriver's test doubles shared by its tests."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_deriver.batching import RepKey
from mnemo_schema.events import Envelope


class Log:
    """The log as the deriver writes to it: events in order, with their positions."""

    def __init__(self) -> None:
        self.events: list[Envelope] = []

    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        self.events.extend(events)
        return list(range(len(self.events) - len(events) + 1, len(self.events) + 1))


class Lines:
    """Each representation's line: the newest position taken and done, and the newest
    observation (the contract in ``test_progress_contract``)."""

    def __init__(self) -> None:
        self.taken_at: dict[RepKey, int] = {}
        self.done_at: dict[RepKey, int] = {}
        self.observation_at: dict[RepKey, int] = {}
        self.sessions: set[str] = set()  # the sessions named with the progress

    async def taken(self, key: RepKey, seq: int, sessions: Sequence[str] = ()) -> None:
        self.taken_at[key] = max(self.taken_at.get(key, 0), seq)
        self.sessions.update(sessions)

    async def done(
        self, key: RepKey, seq: int, observation_seq: int, sessions: Sequence[str] = ()
    ) -> None:
        self.taken_at[key] = max(self.taken_at.get(key, 0), seq)
        self.done_at[key] = max(self.done_at.get(key, 0), seq)
        self.observation_at[key] = max(self.observation_at.get(key, 0), observation_seq)
        self.sessions.update(sessions)
