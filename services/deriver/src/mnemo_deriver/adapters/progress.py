"""Work-unit progress per (session, observer, observed), in Postgres, for the queue status."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from psycopg_pool import AsyncConnectionPool

from mnemo_schema.subjects import progress_subject

Units = dict[tuple[str, str, str, str], int]

_UPSERT = """
INSERT INTO deriver_progress (workspace, session_id, observer, observed, in_progress, done,
                              last_seq)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (workspace, session_id, observer, observed) DO UPDATE SET
    in_progress = GREATEST(0, deriver_progress.in_progress + EXCLUDED.in_progress),
    done = deriver_progress.done + EXCLUDED.done,
    last_seq = GREATEST(deriver_progress.last_seq, EXCLUDED.last_seq)
"""


# Publishes one core NATS message (subject, body): at most once, never blocking the work.
Announce = Callable[[str, bytes], Awaitable[None]]


class PgProgress:
    """Progress rows, and (with ``announce``) a note on ``mnemo.progress.<workspace>`` naming
    the sessions, for whoever watches queues drain (the gateway's ``queue.empty``)."""

    def __init__(self, pool: AsyncConnectionPool, announce: Announce | None = None) -> None:
        self._pool = pool
        self._announce = announce

    async def _add(self, units: Units, in_progress: int, done: int, last_seq: int = 0) -> None:
        rows = [(*k, in_progress * n, done * n, last_seq) for k, n in sorted(units.items())]
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(_UPSERT, rows)
        if self._announce is not None:
            sessions: dict[str, set[str]] = {}
            for workspace, session_id, _, _ in units:
                sessions.setdefault(workspace, set()).add(session_id)
            for workspace, ids in sorted(sessions.items()):
                body = json.dumps({"sessions": sorted(ids)}).encode()
                await self._announce(progress_subject(workspace), body)

    async def started(self, units: Units) -> None:
        await self._add(units, 1, 0)

    async def finished(self, units: Units, last_seq: int = 0) -> None:
        await self._add(units, -1, 1, last_seq)

    async def requeued(self, units: Units) -> None:
        await self._add(units, -1, 0)
