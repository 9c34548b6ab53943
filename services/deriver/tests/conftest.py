"""The deriver's test doubles shared by its tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from mnemo_deriver.batching import RepKey
from mnemo_deriver.ports import Sink
from mnemo_schema.events import Envelope, MessagePosted


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


class Records:
    """Gap records in memory (the contract in ``test_gap_ports_contract``)."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[int, int]] = {}  # workspace -> (partition, position)

    async def load(self, partition: int) -> dict[str, int]:
        return {w: pos for w, (p, pos) in self.rows.items() if p == partition}

    async def keep(self, workspace: str, partition: int, position: int) -> None:
        self.rows[workspace] = (partition, position)

    async def drop(self, workspace: str) -> None:
        self.rows.pop(workspace, None)


class MemoryLog:
    """Posted messages by position, as a re-read finds them (one partition)."""

    def __init__(self) -> None:
        self.messages: list[tuple[int, MessagePosted]] = []
        self.grew = asyncio.Event()

    def append(self, event: MessagePosted) -> int:
        seq = len(self.messages) + 1
        self.messages.append((seq, event))
        self.grew.set()
        return seq

    def erase(self, workspace: str) -> None:
        self.messages = [(s, e) for s, e in self.messages if e.workspace != workspace]


class Reread:
    """Re-reads over a ``MemoryLog`` (the contract in ``test_gap_ports_contract``)."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        self._reads: dict[str, tuple[asyncio.Task[None], list[int]]] = {}
        self.started: list[tuple[str, int]] = []  # (workspace, from)

    async def start(self, partition: int, workspace: str, start: int, sink: Sink) -> None:
        del partition  # one partition
        await self.stop(workspace)
        last = [start - 1]
        self.started.append((workspace, start))
        self._reads[workspace] = (asyncio.create_task(self._read(workspace, sink, last)), last)

    async def _read(self, workspace: str, sink: Sink, last: list[int]) -> None:
        while True:
            self.log.grew.clear()
            for seq, e in list(self.log.messages):
                if seq > last[0] and e.workspace == workspace:
                    last[0] = seq
                    if not await sink([(seq, e)]):
                        return
            await self.log.grew.wait()

    async def stop(self, workspace: str) -> None:
        read = self._reads.pop(workspace, None)
        if read is not None:
            read[0].cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await read[0]

    async def any_from(self, partition: int, workspace: str, start: int) -> bool:
        del partition
        return any(s >= start and e.workspace == workspace for s, e in self.log.messages)
