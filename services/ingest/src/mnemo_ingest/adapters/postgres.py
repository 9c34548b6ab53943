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

    async def conclusion_exists(
        self, workspace: str, conclusion_id: str, observer: str, observed: str
    ) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT 1 FROM observations o LEFT JOIN observation_aliases a"
                " ON a.workspace = o.workspace AND a.alias_id = %s"
                " WHERE o.workspace = %s AND o.id = COALESCE(a.canonical_id, %s)"
                " AND o.observer = %s AND o.observed = %s AND o.deleted_at IS NULL",
                (conclusion_id, workspace, conclusion_id, observer, observed),
            )
            return await cur.fetchone() is not None
