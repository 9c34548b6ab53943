"""Read-your-writes: wait until a projection has applied a given position of a workspace.

A projection applies each partition of the log on its own and announces each committed
position (``<partition>:<seq>``) on a core NATS subject; as that is at-most-once, waiters also
re-read the positions from Postgres on a short interval. A write to a workspace is visible once
its partition's position has reached the write's, or, for a projection that takes a partition's
workspaces in turns, once the workspace's own position has (announced as
``<partition>:<seq>:<workspace's seq>:<workspace>``, stored in ``projection_ahead``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Any

import psycopg
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from mnemo_gateway.positions import Position
from mnemo_runtime import positions
from mnemo_runtime.bus import ensure_stream
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects

_POLL_S = 0.1


class ProjectionWatermark:
    """The applied positions of one projection (``pg``: entities and messages; ``memory``),
    one forward-only ``Position`` per partition."""

    def __init__(
        self,
        nc: NATS,
        pool: Pool,
        projection: str = positions.ENTITIES,
        subject: str = subjects.PROJECTOR_APPLIED,
        *,
        fair: bool = False,
    ) -> None:
        self._nc = nc
        self._pool = pool
        self._projection = projection
        self._subject = subject
        self.partitions = subjects.DEFAULT_PARTITIONS
        self._positions: dict[int, Position] = {}
        # Workspaces applied past their partition's position, and how far (forgotten once the
        # partition's position passes them).
        self._ahead: dict[str, Position] = {}
        self._waiting: Counter[str] = Counter()
        self._fair = fair
        self._sub: Subscription | None = None

    async def start(self) -> None:
        """Learn the stream's partitions, subscribe to announcements, read the positions."""
        self.partitions = await ensure_stream(self._nc.jetstream())
        self._sub = await self._nc.subscribe(self._subject, cb=self._on_applied)
        # The projector may not have created its tables yet; /ready says so until it has.
        with contextlib.suppress(psycopg.Error):
            await self.refresh()

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    def partition(self, workspace: str) -> int:
        """The partition of ``workspace``."""
        return subjects.partition_of(workspace, self.partitions)

    @property
    def values(self) -> dict[int, int]:
        """The newest applied position seen, per partition."""
        return {p: position.value for p, position in self._positions.items()}

    def _position(self, partition: int) -> Position:
        position = self._positions.get(partition)
        if position is None:
            position = Position(poll=self._refresh_quietly, poll_s=_POLL_S)
            self._positions[partition] = position
        return position

    async def _on_applied(self, msg: Msg) -> None:
        with contextlib.suppress(ValueError):
            parts = msg.data.decode().split(":", 3)
            partition, floor = int(parts[0]), int(parts[1])
            if len(parts) == 4 and self._fair:
                self._workspace(parts[3]).advance(int(parts[2]))
            self._advance(partition, floor)

    def _advance(self, partition: int, floor: int) -> None:
        """Move ``partition``'s position to ``floor``; forget the workspaces it has passed."""
        self._position(partition).advance(floor)
        passed = [
            w
            for w, p in self._ahead.items()
            if p.value <= floor and not self._waiting[w] and self.partition(w) == partition
        ]
        for workspace in passed:
            self._ahead.pop(workspace).advance(floor)

    def _workspace(self, workspace: str) -> Position:
        position = self._ahead.get(workspace)
        if position is None:
            position = self._ahead[workspace] = Position()
        return position

    async def refresh(self) -> dict[int, int]:
        """Re-read the applied positions from Postgres."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT partition, seq FROM projection_positions WHERE name = %s",
                (self._projection,),
            )
            rows: list[Any] = await cur.fetchall()  # dict rows (the pool's row factory)
            cur = await conn.execute(
                "SELECT workspace, seq FROM projection_ahead WHERE name = %s", (self._projection,)
            )
            ahead: list[Any] = await cur.fetchall()
        for a in ahead:
            self._workspace(str(a["workspace"])).advance(int(a["seq"]))
        for r in rows:
            self._advance(int(r["partition"]), int(r["seq"]))
        return self.values

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(psycopg.Error):
            await self.refresh()

    async def wait(self, workspace: str, seq: int, timeout: float) -> bool:
        """True once position ``seq`` of ``workspace`` is applied; False if ``timeout`` passes
        first."""
        floor = self._position(self.partition(workspace))
        if floor.value >= seq or not self._fair:
            return await floor.wait(seq, timeout)
        ahead = self._workspace(workspace)
        if ahead.value >= seq:
            return True
        self._waiting[workspace] += 1
        waits = [asyncio.ensure_future(p.wait(seq, timeout)) for p in (floor, ahead)]
        try:
            for done in asyncio.as_completed(waits):
                if await done:
                    return True
            return False
        finally:
            for w in waits:
                w.cancel()
            self._waiting[workspace] -= 1
            if not self._waiting[workspace]:
                del self._waiting[workspace]
