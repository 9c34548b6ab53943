"""Read queries against the projector's Postgres read models."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from psycopg.abc import Params

from mnemo_runtime.filter_sql import CONCLUSION_COLUMNS, MESSAGE_COLUMNS, compile_filters
from mnemo_runtime.pg import Pool
from mnemo_schema import filters as f
from mnemo_schema.config import WorkspaceConfiguration, effective
from mnemo_schema.errors import Refusal

Row = dict[str, Any]


@dataclass(frozen=True)
class Listing:
    """A table that list routes page through: its filterable fields and their columns."""

    table: str
    columns: dict[str, str]
    fields: dict[str, f.Field]


_ENTITY = {"id": "id", "metadata": "metadata", "created_at": "created_at"}
WORKSPACES = Listing("workspaces", _ENTITY, f.WORKSPACE_FIELDS)
PEERS = Listing("peers", _ENTITY, f.PEER_FIELDS)
SESSIONS = Listing("sessions", {**_ENTITY, "is_active": "is_active"}, f.SESSION_FIELDS)
MESSAGES = Listing("messages", MESSAGE_COLUMNS, f.MESSAGE_FIELDS)
SCOPES = Listing("scopes", _ENTITY, f.WORKSPACE_FIELDS)
CONCLUSIONS = Listing("observations", CONCLUSION_COLUMNS, f.CONCLUSION_FIELDS)
# Webhook endpoints are listed whole: no filters.
WEBHOOKS = Listing("webhook_endpoints", {"id": "id", "created_at": "created_at"}, {})


def _in_force(row: Row | None) -> WorkspaceConfiguration:
    """The configuration a row of the workspace's and the session's (either may be null)
    puts in force: the workspace's, overridden by the session's."""
    if row is None:
        return WorkspaceConfiguration()
    levels = [WorkspaceConfiguration.model_validate(row["workspace"] or {})]
    if row["session"]:
        levels.append(WorkspaceConfiguration.model_validate(row["session"]))
    return effective(*levels)


class ReadStore:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def one(self, sql: str, params: Params) -> Row | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchone()

    async def all(self, sql: str, params: Params) -> list[Row]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

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

    async def configuration(self, ws: str, session_id: str | None = None) -> WorkspaceConfiguration:
        """The configuration in force: the workspace's, overridden by the session's."""
        row = await self.one(
            "SELECT w.configuration AS workspace, s.configuration AS session FROM workspaces w"
            " LEFT JOIN sessions s ON s.workspace = w.id AND s.id = %s WHERE w.id = %s",
            (session_id, ws),
        )
        return _in_force(row)

    async def session_read(
        self, ws: str, session_id: str, peers: list[str]
    ) -> WorkspaceConfiguration:
        """For a read of a session concerning ``peers``, in one round trip: the configuration
        in force, once the session and each peer are known to exist (else a 404 naming the
        first missing, the session first)."""
        row = await self.one(
            "SELECT s.id IS NOT NULL AS found, w.configuration AS workspace,"
            " s.configuration AS session, ARRAY(SELECT p.id FROM peers p WHERE p.workspace = %s"
            " AND p.id = ANY(%s)) AS peers"
            " FROM (SELECT 1) AS one LEFT JOIN workspaces w ON w.id = %s"
            " LEFT JOIN sessions s ON s.workspace = %s AND s.id = %s",
            (ws, peers, ws, ws, session_id),
        )
        if row is None or not row["found"]:
            raise Refusal(404, f"session {session_id!r} not found", "session_id")
        for peer in peers:
            if peer not in row["peers"]:
                raise Refusal(404, f"peer {peer!r} not found", "peer_id")
        return _in_force(row)

    async def scope(self, ws: str, scope_id: str, field: str = "scope_id") -> Row:
        row = await self.one(
            "SELECT * FROM scopes WHERE workspace = %s AND id = %s", (ws, scope_id)
        )
        if row is None:
            raise Refusal(404, f"scope {scope_id!r} not found", field)
        return row

    async def scope_members(self, ws: str, scope_ids: list[str], field: str) -> list[str]:
        """The sessions of the scopes (all of which must exist), sorted."""
        rows = await self.all(
            "SELECT q.id, s.id IS NOT NULL AS known, m.session_id"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS q(id, n)"
            " LEFT JOIN scopes s ON s.workspace = %s AND s.id = q.id"
            " LEFT JOIN scope_sessions m ON m.workspace = %s AND m.scope_id = q.id ORDER BY q.n",
            (scope_ids, ws, ws),
        )
        for r in rows:
            if not r["known"]:
                at = field if len(scope_ids) == 1 else f"{field}.{scope_ids.index(r['id'])}"
                raise Refusal(404, f"scope {r['id']!r} not found", at)
        return sorted({r["session_id"] for r in rows if r["session_id"] is not None})

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
        listing: Listing,
        scope_sql: str,
        scope_params: dict[str, Any],
        filters: dict[str, Any] | None,
        page: int,
        size: int,
        order: str,
    ) -> tuple[list[Row], int, int]:
        """One page of the listing's rows in scope (``scope_sql`` with named parameters),
        filtered; returns rows, total and page count."""
        where, params = compile_filters(filters, listing.columns, listing.fields)
        cond = f"{scope_sql} AND {where}"
        args = {**scope_params, **params, "limit": size, "offset": (page - 1) * size}
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT count(*) AS n FROM {listing.table} WHERE {cond}", args
            )
            counted = await cur.fetchone()
            total = int(counted["n"]) if counted is not None else 0
            cur = await conn.execute(
                f"SELECT * FROM {listing.table} WHERE {cond} ORDER BY {order}"
                " LIMIT %(limit)s OFFSET %(offset)s",
                args,
            )
            rows: list[Row] = await cur.fetchall()
        return rows, total, max(1, math.ceil(total / size)) if total else 0
