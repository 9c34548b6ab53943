"""How far the summarizer has counted each session, in Postgres, for the queue status; and a
note on ``mnemo.progress.<workspace>`` for whoever watches queues drain (``queue.empty``)."""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

from mnemo_runtime.progress import Announce, announce_sessions

_UPSERT = """
INSERT INTO summarizer_sessions (workspace, session_id, done_seq, summary_seq)
VALUES (%s, %s, %s, %s)
ON CONFLICT (workspace, session_id) DO UPDATE SET
    done_seq = GREATEST(summarizer_sessions.done_seq, EXCLUDED.done_seq),
    summary_seq = GREATEST(summarizer_sessions.summary_seq, EXCLUDED.summary_seq)
"""


class PgProgress:
    """The sessions' rows; with ``announce``, a progress note per workspace after them."""

    def __init__(self, pool: AsyncConnectionPool, announce: Announce | None = None) -> None:
        self._pool = pool
        self._announce = announce

    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        rows = [(ws, sid, seq, summary) for (ws, sid), (seq, summary) in sorted(sessions.items())]
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(_UPSERT, rows)
        by_workspace: dict[str, list[str]] = {}
        for ws, sid in sessions:
            by_workspace.setdefault(ws, []).append(sid)
        for ws, ids in sorted(by_workspace.items()):
            await announce_sessions(self._announce, ws, ids)
