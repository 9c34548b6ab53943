"""How far each representation's line has come, in Postgres, for the queue status."""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

from mnemo_deriver.batching import RepKey

_UPSERT = """
INSERT INTO deriver_lines (workspace, observer, observed, taken_seq, done_seq, observation_seq)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (workspace, observer, observed) DO UPDATE SET
    taken_seq = GREATEST(deriver_lines.taken_seq, EXCLUDED.taken_seq),
    done_seq = GREATEST(deriver_lines.done_seq, EXCLUDED.done_seq),
    observation_seq = GREATEST(deriver_lines.observation_seq, EXCLUDED.observation_seq)
"""


class PgProgress:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def _upsert(self, key: RepKey, taken: int, done: int, observation: int) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                _UPSERT, (key.workspace, key.observer, key.observed, taken, done, observation)
            )

    async def taken(self, key: RepKey, seq: int) -> None:
        await self._upsert(key, seq, 0, 0)

    async def done(self, key: RepKey, seq: int, observation_seq: int) -> None:
        await self._upsert(key, seq, seq, observation_seq)
