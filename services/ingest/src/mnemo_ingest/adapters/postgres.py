"""Read-side lookups ingest needs, against the projector's tables."""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool


class PgMessageDirectory:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def session_of(self, workspace: str, message_id: str) -> str | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT session_id FROM messages WHERE workspace = %s AND id = %s",
                (workspace, message_id),
            )
            row = await cur.fetchone()
        return None if row is None else str(row["session_id"])  # type: ignore[call-overload]
