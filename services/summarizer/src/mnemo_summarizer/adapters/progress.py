"""How far the summarizer has counted each session, in Postgres, for the queue status."""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

_UPSERT = """
INSERT INTO summarizer_sessions (workspace, session_id, done_seq, summary_seq)
VALUES (%s, %s, %s, %s)
ON CONFLICT (workspace, session_id) DO UPDATE SET
    done_seq = GREATEST(summarizer_sessions.done_seq, EXCLUDED.done_seq),
    summary_seq = GREATEST(summarizer_sessions.summary_seq, EXCLUDED.summary_seq)
"""


class PgProgress:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        rows = [(ws, sid, seq, summary) for (ws, sid), (seq, summary) in sorted(sessions.items())]
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(_UPSERT, rows)
