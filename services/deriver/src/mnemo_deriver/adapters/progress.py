"""How far each representation's line has come, in Postgres, for the queue status; and a note
on ``mnemo.progress.<workspace>`` for whoever watches queues drain (the gateway's
``queue.empty``)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg_pool import AsyncConnectionPool

from mnemo_deriver.batching import RepKey
from mnemo_runtime.progress import Announce, announce_sessions

_UPSERT = """
INSERT INTO deriver_lines (workspace, observer, observed, taken_seq, done_seq, observation_seq)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (workspace, observer, observed) DO UPDATE SET
    taken_seq = GREATEST(deriver_lines.taken_seq, EXCLUDED.taken_seq),
    done_seq = GREATEST(deriver_lines.done_seq, EXCLUDED.done_seq),
    observation_seq = GREATEST(deriver_lines.observation_seq, EXCLUDED.observation_seq)
"""


class PgProgress:
    """The lines' rows; with ``announce``, a progress note naming the sessions after each."""

    def __init__(self, pool: AsyncConnectionPool, announce: Announce | None = None) -> None:
        self._pool = pool
        self._announce = announce

    async def _upsert(
        self, key: RepKey, taken: int, done: int, observation: int, sessions: Sequence[str]
    ) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                _UPSERT, (key.workspace, key.observer, key.observed, taken, done, observation)
            )
        await announce_sessions(self._announce, key.workspace, sessions)

    async def taken(self, key: RepKey, seq: int, sessions: Sequence[str] = ()) -> None:
        await self._upsert(key, seq, 0, 0, sessions)

    async def done(
        self, key: RepKey, seq: int, observation_seq: int, sessions: Sequence[str] = ()
    ) -> None:
        await self._upsert(key, seq, seq, observation_seq, sessions)
