"""Reads that touch quarantined work say so: the ``Mnemo-Quarantined`` response header.

When a workspace (or the session a request names) has open dead letters (an event a
projection could not apply, a message a stage could not derive or summarize), every response
about it carries ``Mnemo-Quarantined: <count>; stages=<stage,...>``: what it returns may be
missing what those letters hold, until an operator redrives or discards them
(``mnemo dlq``). The body is left as the Honcho API shapes it.

The counts are kept in memory and refreshed in the background: at most every
``refresh_s``, and at once when a letter is announced on ``mnemo.dlq.>``, so a request never
waits on the lookup.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import defaultdict

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects

log = get_logger("mnemo.gateway")

HEADER = b"mnemo-quarantined"
_PATH = re.compile(r"/v3/workspaces/([^/]+)(?:/sessions/([^/]+))?")
_OPEN = (
    "SELECT workspace, session_id, stage, count(*) AS n FROM dead_letters"
    " WHERE status IN ('open', 'redrive') AND workspace IS NOT NULL"
    " GROUP BY workspace, session_id, stage"
)

# (workspace, session or None for the whole workspace) -> stage -> open letters
Counts = dict[tuple[str, str | None], dict[str, int]]


class QuarantineMarks:
    """Open dead letters per workspace and session, for the response header."""

    def __init__(self, nc: NATS, pool: Pool, refresh_s: float = 2.0) -> None:
        self._nc = nc
        self._pool = pool
        self._refresh_s = refresh_s
        self._counts: Counts = {}
        self._fresh_at = float("-inf")
        self._refreshing: asyncio.Task[None] | None = None
        self._sub: Subscription | None = None

    async def start(self) -> None:
        """Read the counts and follow the announcements of new letters."""
        self._sub = await self._nc.subscribe(subjects.DEAD_LETTER_SUBJECTS, cb=self._announced)
        await self.refresh()

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if self._refreshing is not None:
            self._refreshing.cancel()

    async def _announced(self, _: Msg) -> None:
        self._fresh_at = float("-inf")
        self._soon()

    async def refresh(self) -> None:
        """Re-read the open letters (an unreachable database keeps the last counts)."""
        try:
            async with self._pool.connection() as conn:
                rows = await (await conn.execute(_OPEN)).fetchall()
        except Exception as err:
            log.debug("gateway.marks_unavailable", error=repr(err))
            return
        counts: Counts = defaultdict(dict)
        for r in rows:
            ws, sid, stage, n = r["workspace"], r["session_id"], r["stage"], int(r["n"])
            whole = counts[(ws, None)]
            whole[stage] = whole.get(stage, 0) + n
            if sid is not None:
                counts[(ws, sid)][stage] = n
        self._counts = dict(counts)
        self._fresh_at = time.monotonic()

    def _soon(self) -> None:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.get_running_loop().create_task(self.refresh())

    def header(self, path: str) -> bytes | None:
        """The header value for a request to ``path``, or None when nothing it touches is
        quarantined."""
        if time.monotonic() - self._fresh_at > self._refresh_s:
            self._soon()
        if not self._counts:
            return None
        match = _PATH.match(path)
        if match is None:
            return None
        workspace, session = match.group(1), match.group(2)
        stages = self._counts.get((workspace, session) if session else (workspace, None))
        if not stages:
            return None
        names = ",".join(sorted(stages))
        return f"{sum(stages.values())}; stages={names}".encode()
