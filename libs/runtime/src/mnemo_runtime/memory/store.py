"""Reads of the representation store: the memory projection's observations, always keyed by
their representation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemo_runtime.pg import Pool
from mnemo_runtime.vectors.ports import Scope, require_scope

Row = dict[str, Any]


class RepresentationStore:
    """Observations of one (workspace, observer, observed) at a time; no query without the key."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def _all(self, sql: str, params: Sequence[Any]) -> list[Row]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

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
