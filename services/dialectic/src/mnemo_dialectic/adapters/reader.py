"""``ScopeReader`` over the Postgres projections and the vector index.

Every statement carries the scope: observations by (workspace, observer, observed) through the
representation store, messages by the (observer, observed) pair in their ``representations``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from mnemo_dialectic.domain import Msg, Obs
from mnemo_runtime.memory.store import RepresentationStore
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.vectors import Level, Scope, SearchFilters

MSG_COLUMNS = "id, session_id, peer_id, content, created_at, seq"
VISIBLE = (
    "workspace = %(ws)s AND representations @> %(pair)s::jsonb"
    " AND (%(session)s::text IS NULL OR session_id = %(session)s)"
)


def _obs(r: dict[str, Any]) -> Obs:
    return Obs(
        id=r["id"], level=r["level"], content=r["content"], created_at=r["created_at"],
        observer=r["observer"], observed=r["observed"], session_id=r["session_id"],
        observed_at=r.get("observed_at"), premise_ids=tuple(r["premise_ids"]),
        source_message_ids=tuple(r["source_message_ids"]),
    )  # fmt: skip


def _msg(r: dict[str, Any]) -> Msg:
    return Msg(
        id=r["id"], session_id=r["session_id"], peer_id=r["peer_id"], content=r["content"],
        created_at=r["created_at"], seq=r["seq"],
    )  # fmt: skip


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class PgScopeReader:
    """Reads of one representation from Postgres, with similarity search when memory is wired."""

    def __init__(self, pool: AsyncConnectionPool, memory: MemoryAdapters | None) -> None:
        self._pool = pool
        self._store = RepresentationStore(pool)
        self._memory = memory

    async def _rows(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()  # type: ignore[return-value]

    @staticmethod
    def _params(scope: Scope, session_id: str | None, **more: Any) -> dict[str, Any]:
        pair = json.dumps([{"observer": scope.observer, "observed": scope.observed}])
        return {"ws": scope.workspace, "pair": pair, "session": session_id, **more}

    async def search(
        self,
        scope: Scope,
        text: str,
        *,
        limit: int,
        levels: Sequence[Level] | None = None,
        session_id: str | None = None,
        max_distance: float | None = None,
    ) -> list[Obs]:
        """Nearest observations by embedding; by text rank when no index is wired."""
        if self._memory is None:
            return await self._text_search(scope, text, limit, levels, session_id)
        vector = await self._memory.embedder.embed_query(text)
        hits = await self._memory.index.search(
            vector, scope, limit=limit, filters=SearchFilters.of(levels, session_id),
            max_distance=max_distance,
        )  # fmt: skip
        return await self.observations(scope, [h.id for h in hits])

    async def _text_search(
        self,
        scope: Scope,
        text: str,
        limit: int,
        levels: Sequence[Level] | None,
        session_id: str | None,
    ) -> list[Obs]:
        rows = await self._rows(
            "SELECT * FROM observations WHERE workspace = %(ws)s AND observer = %(observer)s"
            " AND observed = %(observed)s AND deleted_at IS NULL"
            " AND (%(levels)s::text[] IS NULL OR level = ANY(%(levels)s))"
            " AND (%(session)s::text IS NULL OR session_id = %(session)s)"
            " ORDER BY ts_rank(to_tsvector('english', content),"
            " plainto_tsquery('english', %(text)s)) DESC, seq DESC LIMIT %(limit)s",
            {
                "ws": scope.workspace, "observer": scope.observer, "observed": scope.observed,
                "levels": list(levels) if levels else None, "session": session_id,
                "text": text, "limit": limit,
            },
        )  # fmt: skip
        return [_obs(r) for r in rows]

    async def observations(self, scope: Scope, ids: Sequence[str]) -> list[Obs]:
        """Live observations of ``scope`` by id."""
        return [_obs(r) for r in await self._store.get(scope, list(ids))] if ids else []

    async def messages(
        self, scope: Scope, ids: Sequence[str], *, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages by id."""
        if not ids:
            return []
        rows = await self._rows(
            f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE} AND id = ANY(%(ids)s)"
            " ORDER BY created_at, seq",
            self._params(scope, session_id, ids=list(ids)),
        )
        return [_msg(r) for r in rows]

    async def grep(
        self, scope: Scope, text: str, *, limit: int, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages containing ``text``."""
        rows = await self._rows(
            f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE} AND content ILIKE %(like)s"
            " ORDER BY created_at, seq LIMIT %(limit)s",
            self._params(scope, session_id, like=_like(text), limit=limit),
        )
        return [_msg(r) for r in rows]

    async def in_range(
        self,
        scope: Scope,
        start: datetime,
        end: datetime,
        *,
        limit: int,
        session_id: str | None = None,
    ) -> list[Msg]:
        """Visible messages created in [start, end)."""
        rows = await self._rows(
            f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE}"
            " AND created_at >= %(start)s AND created_at < %(end)s"
            " ORDER BY created_at, seq LIMIT %(limit)s",
            self._params(scope, session_id, start=start, end=end, limit=limit),
        )
        return [_msg(r) for r in rows]

    async def around(
        self, scope: Scope, message: Msg, window: int, *, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages of the same session within ``window`` positions."""
        # seq is a log position shared with other sessions, so neighbours are counted, not subtracted.
        same = f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE} AND session_id = %(of)s"
        rows = await self._rows(
            f"({same} AND seq < %(seq)s ORDER BY seq DESC LIMIT %(before)s)"
            f" UNION ALL ({same} AND seq >= %(seq)s ORDER BY seq LIMIT %(after)s) ORDER BY seq",
            self._params(
                scope, session_id, of=message.session_id, seq=message.seq, before=window,
                after=window + 1,
            ),
        )  # fmt: skip
        return [_msg(r) for r in rows]
