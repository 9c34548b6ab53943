"""The messages a deriver holds: delivered, not yet derived for every representation they feed.

A message is acknowledged once the last of its representations' batches is done, so each is
held until then, with its delivery (the newest, if the bus delivered it again meanwhile). How
many are held is bounded (``held_messages``): the feeds wait for ``room`` before each fetch, and
the rest of a backlog waits in the bus instead of in memory.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass

from mnemo_runtime.work import Delivery


@dataclass
class Pending:
    """One held message: its delivery, the representations still to derive it, its partition;
    ``again``: read again from the log (its delivery settles the gap, not the durable)."""

    delivery: Delivery
    remaining: int
    partition: int
    again: bool = False


class HeldMessages:
    """The held messages by stream sequence, and the room left for more."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by_seq: dict[int, Pending] = {}
        self._of_workspace: Counter[str] = Counter()
        self._room = asyncio.Event()
        self._room.set()

    def __len__(self) -> int:
        return len(self._by_seq)

    def get(self, seq: int) -> Pending | None:
        return self._by_seq.get(seq)

    def count(self, workspace: str) -> int:
        """How many messages of ``workspace`` are held."""
        return self._of_workspace.get(workspace, 0)

    def hold(
        self, d: Delivery, representations: int, partition: int, *, again: bool = False
    ) -> Pending:
        """Hold ``d`` until ``representations`` batches of it are done."""
        pending = self._by_seq[d.seq] = Pending(d, representations, partition, again)
        self._of_workspace[d.event.workspace] += 1
        return pending

    def done_once(self, seq: int, pending: Pending) -> bool:
        """Count one of ``pending``'s representations done; True once all are (it is no longer
        held, and its delivery is to be acknowledged)."""
        pending.remaining -= 1
        if pending.remaining > 0:
            return False
        if self._by_seq.get(seq) is pending:
            del self._by_seq[seq]
            self._uncount(pending)
            self._freed()
        return True

    def forget(self, partition: int) -> None:
        """Let go of the messages of ``partition`` (handed over: delivered again elsewhere)."""
        for p in [p for p in self._by_seq.values() if p.partition == partition]:
            self._uncount(p)
        self._by_seq = {s: p for s, p in self._by_seq.items() if p.partition != partition}
        self._freed()

    def _uncount(self, pending: Pending) -> None:
        workspace = pending.delivery.event.workspace
        self._of_workspace[workspace] -= 1
        if self._of_workspace[workspace] <= 0:
            del self._of_workspace[workspace]

    @property
    def full(self) -> bool:
        """Whether ``limit`` messages are held: no more are fetched until some are done."""
        return len(self._by_seq) >= self.limit

    async def room(self) -> None:
        """Return once fewer than ``limit`` messages are held."""
        while self.full:
            self._room.clear()
            await self._room.wait()

    def _freed(self) -> None:
        if not self.full:
            self._room.set()
