"""Read-your-writes: wait until the projections have applied a given stream position.

The projector announces each committed position on a core NATS subject; as that is at-most-once,
waiters also re-read the position from Postgres on a short interval.
"""

from __future__ import annotations

import contextlib

import psycopg
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from psycopg_pool import AsyncConnectionPool

from mnemo_gateway.positions import Position
from mnemo_schema import subjects

_POLL_S = 0.1


class ProjectionWatermark(Position):
    """The applied position of one projection (``pg``: entities and messages; ``memory``)."""

    def __init__(
        self,
        nc: NATS,
        pool: AsyncConnectionPool,
        projection: str = "pg",
        subject: str = subjects.PROJECTOR_APPLIED,
    ) -> None:
        self._nc = nc
        self._pool = pool
        self._projection = projection
        self._subject = subject
        super().__init__(poll=self._refresh_quietly, poll_s=_POLL_S)
        self._sub: Subscription | None = None

    async def start(self) -> None:
        """Subscribe to announcements and read the current position."""
        self._sub = await self._nc.subscribe(self._subject, cb=self._on_applied)
        # The projector may not have created its tables yet; /ready says so until it has.
        with contextlib.suppress(psycopg.Error):
            await self.refresh()

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _on_applied(self, msg: Msg) -> None:
        with contextlib.suppress(ValueError):
            self.advance(int(msg.data))

    async def refresh(self) -> int:
        """Re-read the applied position from Postgres."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT seq FROM projection_positions WHERE name = %s", (self._projection,)
            )
            row = await cur.fetchone()
        if row is not None:
            self.advance(int(row["seq"]))  # type: ignore[call-overload]
        return self.value

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(psycopg.Error):
            await self.refresh()
