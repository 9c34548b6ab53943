"""Reads of the representation store and the write-time checks every writer runs first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg_pool import AsyncConnectionPool

from mnemo_runtime.memory.rules import CitedMessage, Rejected, verdicts
from mnemo_runtime.vectors.ports import Scope, require_scope
from mnemo_schema.observations import ObservationWritten

Row = dict[str, Any]


class RepresentationStore:
    """Observations of one (workspace, observer, observed) at a time; no query without the key."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def _all(self, sql: str, params: Sequence[Any]) -> list[Row]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()  # type: ignore[return-value]

    async def resolve(self, scope: Scope, ids: Sequence[str]) -> dict[str, str]:
        """Each id (or alias) that names a live observation of ``scope`` -> its canonical id."""
        require_scope(scope)
        rows = await self._all(
            "SELECT q.id AS asked, o.id AS canonical FROM unnest(%s::text[]) AS q(id)"
            " LEFT JOIN observation_aliases a ON a.workspace = %s AND a.alias_id = q.id"
            " JOIN observations o ON o.workspace = %s AND o.id = COALESCE(a.canonical_id, q.id)"
            " AND o.observer = %s AND o.observed = %s AND o.deleted_at IS NULL",
            (list(ids), scope.workspace, scope.workspace, scope.observer, scope.observed),
        )
        return {r["asked"]: r["canonical"] for r in rows}

    async def get(self, scope: Scope, ids: Sequence[str]) -> list[Row]:
        """Live observations of ``scope`` by id (aliases resolved), in the order asked."""
        canonical = await self.resolve(scope, ids)
        rows = await self._all(
            "SELECT * FROM observations WHERE workspace = %s AND id = ANY(%s)",
            (scope.workspace, list(set(canonical.values()))),
        )
        by_id = {r["id"]: r for r in rows}
        return [by_id[canonical[i]] for i in ids if i in canonical]

    async def recent(self, scope: Scope, limit: int = 50, levels: Sequence[str] = ()) -> list[Row]:
        """The newest live observations of ``scope``."""
        require_scope(scope)
        return await self._all(
            "SELECT * FROM observations WHERE workspace = %s AND observer = %s AND observed = %s"
            " AND deleted_at IS NULL AND (cardinality(%s::text[]) = 0 OR level = ANY(%s))"
            " ORDER BY seq DESC LIMIT %s",
            (scope.workspace, scope.observer, scope.observed, list(levels), list(levels), limit),
        )

    async def check(self, events: Sequence[ObservationWritten]) -> list[Rejected | None]:
        """For each observation, None if the store accepts it, else why not (the cited messages
        as the message table holds them; see ``rules.verdicts``)."""
        rows = await self._messages(
            {(e.workspace, m) for e in events for m in e.source_message_ids}
        )
        cited = {k: CitedMessage(r["content"], r["representations"]) for k, r in rows.items()}
        reasons = await verdicts(events, cited, self.resolve)
        return [None if r is None else Rejected(r) for r in reasons]

    async def _messages(self, keys: set[tuple[str, str]]) -> dict[tuple[str, str], Row]:
        """The cited messages by (workspace, id): a batch may hold several workspaces' events."""
        if not keys:
            return {}
        workspaces, ids = zip(*sorted(keys), strict=True)
        rows = await self._all(
            "SELECT m.workspace, m.id, m.content, m.representations"
            " FROM unnest(%s::text[], %s::text[]) AS k(workspace, id)"
            " JOIN messages m ON m.workspace = k.workspace AND m.id = k.id",
            (list(workspaces), list(ids)),
        )
        return {(r["workspace"], r["id"]): r for r in rows}
