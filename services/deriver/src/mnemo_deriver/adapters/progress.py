"""Work-unit progress per (session, observer, observed), in Postgres, for the queue status."""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

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


class PgProgress:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def _add(self, units: Units, in_progress: int, done: int, last_seq: int = 0) -> None:
        rows = [(*k, in_progress * n, done * n, last_seq) for k, n in sorted(units.items())]
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(_UPSERT, rows)

    async def started(self, units: Units) -> None:
        await self._add(units, 1, 0)

    async def finished(self, units: Units, last_seq: int = 0) -> None:
        await self._add(units, -1, 1, last_seq)

    async def requeued(self, units: Units) -> None:
        await self._add(units, -1, 0)
