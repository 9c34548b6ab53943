"""Read-your-writes: wait until a projection has applied a given position of a workspace.

A projection applies each partition of the log on its own and announces each committed
position (``<partition>:<seq>``) on a core NATS subject; as that is at-most-once, waiters also
re-read the positions from Postgres on a short interval. A write to a workspace is visible once
its partition's position has reached the write's.
"""

from __future__ import annotations

import asyncio
import contextlib

import psycopg
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from psycopg_pool import AsyncConnectionPool

from mnemo_runtime import positions
from mnemo_runtime.bus import ensure_stream
from mnemo_schema import subjects

_POLL_S = 0.1


class ProjectionWatermark:
    """The applied positions of one projection (``pg``: entities and messages; ``memory``)."""

    def __init__(
        self,
        nc: NATS,
        pool: AsyncConnectionPool,
        projection: str = positions.ENTITIES,
        subject: str = subjects.PROJECTOR_APPLIED,
    ) -> None:
        self._nc = nc
        self._pool = pool
        self._projection = projection
        self._subject = subject
        self.partitions = subjects.DEFAULT_PARTITIONS
        self.values: dict[int, int] = {}
        self._changed = asyncio.Event()
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

    async def _on_applied(self, msg: Msg) -> None:
        partition, _, seq = msg.data.partition(b":")
        with contextlib.suppress(ValueError):
            self._advance(int(partition), int(seq))

    def _advance(self, partition: int, seq: int) -> None:
        if seq > self.values.get(partition, 0):
            self.values[partition] = seq
            self._changed.set()
            self._changed = asyncio.Event()

    async def refresh(self) -> dict[int, int]:
        """Re-read the applied positions from Postgres."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT partition, seq FROM projection_positions WHERE name = %s",
                (self._projection,),
            )
            rows = await cur.fetchall()
        for row in rows:
            r: dict[str, int] = row  # type: ignore[assignment]
            self._advance(int(r["partition"]), int(r["seq"]))
        return dict(self.values)

    async def wait(self, workspace: str, seq: int, timeout: float) -> bool:
        """True once position ``seq`` of ``workspace`` is applied; False if ``timeout`` passes
        first."""
        partition = self.partition(workspace)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.values.get(partition, 0) < seq:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(remaining, _POLL_S))
            if self.values.get(partition, 0) < seq:
                with contextlib.suppress(psycopg.Error):
                    await self.refresh()
        return True
