"""Read-your-writes: wait until a projection has applied a given position of a workspace.

A projection applies each partition of the log on its own and announces each committed
position (``<partition>:<seq>``) on a core NATS subject; as that is at-most-once, waiters also
re-read the positions from Postgres on a short interval. A write to a workspace is visible once
its partition's position has reached the write's.
"""

from __future__ import annotations

import contextlib

import psycopg
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from psycopg_pool import AsyncConnectionPool

from mnemo_gateway.positions import Position
from mnemo_runtime import positions
from mnemo_runtime.bus import ensure_stream
from mnemo_schema import subjects

_POLL_S = 0.1


class ProjectionWatermark:
    """The applied positions of one projection (``pg``: entities and messages; ``memory``),
    one forward-only ``Position`` per partition."""

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
        self._positions: dict[int, Position] = {}
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
        partition, _, seq = msg.data.partition(b":")
        with contextlib.suppress(ValueError):
            self._position(int(partition)).advance(int(seq))

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
            self._position(int(r["partition"])).advance(int(r["seq"]))
        return self.values

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(psycopg.Error):
            await self.refresh()

    async def wait(self, workspace: str, seq: int, timeout: float) -> bool:
        """True once position ``seq`` of ``workspace`` is applied; False if ``timeout`` passes
        first."""
        return await self._position(self.partition(workspace)).wait(seq, timeout)
