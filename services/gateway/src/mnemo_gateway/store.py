"""Read queries against the projector's Postgres read models."""

from __future__ import annotations

import math
from typing import Any

from psycopg_pool import AsyncConnectionPool

from mnemo_gateway.filters import FilterError, to_sql
from mnemo_schema.errors import Refusal

Row = dict[str, Any]

WORKSPACE_COLS = {"id": "id", "metadata": "metadata", "created_at": "created_at"}
PEER_COLS = {"id": "id", "metadata": "metadata", "created_at": "created_at"}
SESSION_COLS = {
    "id": "id", "metadata": "metadata", "created_at": "created_at", "is_active": "is_active",
}  # fmt: skip
MESSAGE_COLS = {
    "id": "id", "peer_id": "peer_id", "session_id": "session_id", "metadata": "metadata",
    "created_at": "created_at", "token_count": "token_count",
}  # fmt: skip


class ReadStore:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def one(self, sql: str, params: tuple[Any, ...]) -> Row | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchone()  # type: ignore[return-value]

    async def all(self, sql: str, params: tuple[Any, ...] | list[Any]) -> list[Row]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()  # type: ignore[return-value]

    async def workspace(self, ws: str) -> Row:
        row = await self.one("SELECT * FROM workspaces WHERE id = %s", (ws,))
        if row is None:
            raise Refusal(404, f"workspace {ws!r} not found", "workspace_id")
        return row

    async def peer(self, ws: str, peer_id: str) -> Row:
        row = await self.one("SELECT * FROM peers WHERE workspace = %s AND id = %s", (ws, peer_id))
        if row is None:
            raise Refusal(404, f"peer {peer_id!r} not found", "peer_id")
        return row

    async def session(self, ws: str, session_id: str) -> Row:
        row = await self.one(
            "SELECT * FROM sessions WHERE workspace = %s AND id = %s", (ws, session_id)
        )
        if row is None:
            raise Refusal(404, f"session {session_id!r} not found", "session_id")
        return row

    async def message(self, ws: str, session_id: str, message_id: str) -> Row:
        row = await self.one(
            "SELECT * FROM messages WHERE workspace = %s AND session_id = %s AND id = %s",
            (ws, session_id, message_id),
        )
        if row is None:
            raise Refusal(404, f"message {message_id!r} not found", "message_id")
        return row

    async def member_config(self, ws: str, session_id: str, peer_id: str) -> Row:
        row = await self.one(
            "SELECT observe_me, observe_others FROM session_peers"
            " WHERE workspace = %s AND session_id = %s AND peer_id = %s",
            (ws, session_id, peer_id),
        )
        if row is None:
            raise Refusal(
                404, f"peer {peer_id!r} is not a member of session {session_id!r}", "peer_id"
            )
        return row

    async def page(
        self,
        table: str,
        scope_sql: str,
        scope_params: list[Any],
        columns: dict[str, str],
        filters: dict[str, Any] | None,
        page: int,
        size: int,
        order: str,
    ) -> tuple[list[Row], int, int]:
        """One page of ``table`` rows in scope, filtered; returns rows, total and page count."""
        try:
            where, params = to_sql(filters, columns)
        except FilterError as err:
            raise Refusal(422, str(err), err.field) from err
        cond = f"{scope_sql} AND {where}"
        args = [*scope_params, *params]
        async with self._pool.connection() as conn:
            cur = await conn.execute(f"SELECT count(*) AS n FROM {table} WHERE {cond}", args)
            total = int((await cur.fetchone())["n"])  # type: ignore[index,call-overload]
            cur = await conn.execute(
                f"SELECT * FROM {table} WHERE {cond} ORDER BY {order} LIMIT %s OFFSET %s",
                [*args, size, (page - 1) * size],
            )
            rows: list[Row] = await cur.fetchall()  # type: ignore[assignment]
        return rows, total, max(1, math.ceil(total / size)) if total else 0
