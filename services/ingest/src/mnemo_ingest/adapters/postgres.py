"""Read-side lookups ingest needs, against the projector's tables."""

from __future__ import annotations

import asyncio
from typing import Any

from mnemo_ingest.ports import SessionCopy, StoredMessage
from mnemo_runtime import positions
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects
from mnemo_schema.errors import Refusal

_POLL_S = 0.02


class PgMessageDirectory:
    def __init__(self, pool: Pool, catch_up_timeout: float = 10.0) -> None:
        self._pool = pool
        self._timeout = catch_up_timeout

    async def session_of(self, workspace: str, message_id: str) -> str | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT session_id FROM messages WHERE workspace = %s AND id = %s",
                (workspace, message_id),
            )
            row = await cur.fetchone()
        return None if row is None else str(row["session_id"])

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

    async def session_copy(self, workspace: str, session_id: str, applied: int) -> SessionCopy:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        async with self._pool.connection() as conn:
            # The entity and message projection must have applied every event ingest has
            # appended for the workspace, or the copy would miss the newest messages.
            # (in the workspace's partition: the projection keeps a row for each partition)
            cur = await conn.execute(
                "SELECT count(*) AS n FROM projection_positions WHERE name = %s",
                (positions.ENTITIES,),
            )
            counted: Any = await cur.fetchone()
            partition = subjects.partition_of(workspace, max(int(counted["n"]), 1))
            while True:
                if await positions.applied(conn, positions.ENTITIES, partition) >= applied:
                    break
                if loop.time() > deadline:
                    raise Refusal(503, "the message projection is behind the log; retry")
                await asyncio.sleep(_POLL_S)
            cur = await conn.execute(
                "SELECT metadata, configuration FROM sessions WHERE workspace = %s AND id = %s",
                (workspace, session_id),
            )
            session: dict[str, Any] | None = await cur.fetchone()
            cur = await conn.execute(
                "SELECT id, peer_id, content, metadata, created_at, token_count FROM messages"
                " WHERE workspace = %s AND session_id = %s ORDER BY seq",
                (workspace, session_id),
            )
            rows: list[dict[str, Any]] = await cur.fetchall()
        if session is None:
            raise Refusal(404, f"session {session_id!r} not found", "session_id")
        return SessionCopy(
            metadata=session["metadata"],
            configuration=session["configuration"],
            messages=[
                StoredMessage(
                    message_id=r["id"],
                    peer_id=r["peer_id"],
                    content=r["content"],
                    created_at=r["created_at"],
                    token_count=r["token_count"],
                    metadata=r["metadata"],
                )
                for r in rows
            ],
        )
