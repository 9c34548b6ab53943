"""``ScopeReader`` over the Postgres projections, with searches answered by the retrieval engine.

Every read carries the scope: messages by the (observer, observed) pair in their
``representations``; observations, searched by meaning and words or read by id, come from the
context service's engine inside the same (workspace, observer, observed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mnemo_dialectic.domain import Msg, Obs, View
from mnemo_runtime.pg import Pool
from mnemo_runtime.retrieval import RetrievalClient
from mnemo_runtime.vectors import Level
from mnemo_schema.retrieval import (
    RankedMessage,
    RankedObservation,
    RetrievalQuery,
    StoredObservation,
)

MSG_COLUMNS = "id, session_id, peer_id, content, created_at, seq"
# A view of the whole workspace has no pair: every message of the workspace is visible.
VISIBLE = (
    "workspace = %(ws)s AND (%(pair)s::jsonb IS NULL OR representations @> %(pair)s::jsonb)"
    " AND (%(sessions)s::text[] IS NULL OR session_id = ANY(%(sessions)s))"
)


def _msg(r: dict[str, Any]) -> Msg:
    return Msg(
        id=r["id"],
        session_id=r["session_id"],
        peer_id=r["peer_id"],
        content=r["content"],
        created_at=r["created_at"],
        seq=r["seq"],
    )


def _obs(o: RankedObservation | StoredObservation) -> Obs:
    return Obs(
        id=o.id,
        level=o.level,
        content=o.content,
        created_at=o.created_at,
        observer=o.observer,
        observed=o.observed,
        session_id=o.session_id,
        observed_at=o.observed_at,
        premise_ids=tuple(o.premise_ids),
        source_message_ids=tuple(o.source_message_ids),
        distance=o.distance if isinstance(o, RankedObservation) else None,
    )


def _ranked_msg(r: RankedMessage) -> Msg:
    m = r.message
    return Msg(
        id=m.id,
        session_id=m.session_id,
        peer_id=m.peer_id,
        content=m.content,
        created_at=m.created_at,
    )


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class PgScopeReader:
    """Reads of one representation from Postgres; searches through the retrieval engine."""

    def __init__(self, pool: Pool, retrieval: RetrievalClient) -> None:
        self._pool = pool
        self._retrieval = retrieval

    async def _rows(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    @staticmethod
    def _params(scope: View, sessions: frozenset[str] | None, **more: Any) -> dict[str, Any]:
        pair = (
            json.dumps([{"observer": scope.observer, "observed": scope.observed}])
            if scope.scope is not None
            else None
        )
        allowed = None if sessions is None else sorted(sessions)
        return {"ws": scope.workspace, "pair": pair, "sessions": allowed, **more}

    async def search(
        self,
        scope: View,
        text: str,
        *,
        limit: int,
        levels: Sequence[Level] | None = None,
        sessions: frozenset[str] | None = None,
        max_distance: float | None = None,
    ) -> list[Obs]:
        """The engine's best observations of ``scope`` for ``text``."""
        found = await self._retrieval.retrieve(
            scope.workspace,
            RetrievalQuery(
                query=text,
                observer=scope.observer,
                observed=scope.observed,
                sessions=None if sessions is None else sorted(sessions),
                levels=list(levels) if levels else None,
                messages=0,
                observations=limit,
                max_distance=max_distance,
            ),
        )
        return [_obs(o) for o in found.observations]

    async def search_messages(
        self, scope: View, text: str, *, limit: int, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """The engine's best messages of ``scope`` for ``text``."""
        found = await self._retrieval.retrieve(
            scope.workspace,
            RetrievalQuery(
                query=text,
                observer=scope.observer,
                observed=scope.observed,
                sessions=None if sessions is None else sorted(sessions),
                messages=limit,
            ),
        )
        return [_ranked_msg(m) for m in found.messages]

    async def observations(
        self, scope: View, ids: Sequence[str], *, sessions: frozenset[str] | None = None
    ) -> list[Obs]:
        """Live observations of ``scope`` by id (resting on ``sessions`` alone, when given)."""
        found = await self._retrieval.stored_ids(
            scope.workspace,
            ids,
            observer=scope.observer,
            observed=scope.observed,
            sessions=None if sessions is None else sorted(sessions),
        )
        return [_obs(o) for o in found.observations]

    async def messages(
        self, scope: View, ids: Sequence[str], *, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """Visible messages by id."""
        if not ids:
            return []
        rows = await self._rows(
            f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE} AND id = ANY(%(ids)s)"
            " ORDER BY created_at, seq",
            self._params(scope, sessions, ids=list(ids)),
        )
        return [_msg(r) for r in rows]

    async def grep(
        self, scope: View, text: str, *, limit: int, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """Visible messages containing ``text``."""
        rows = await self._rows(
            f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE} AND content ILIKE %(like)s"
            " ORDER BY created_at, seq LIMIT %(limit)s",
            self._params(scope, sessions, like=_like(text), limit=limit),
        )
        return [_msg(r) for r in rows]

    async def in_range(
        self,
        scope: View,
        start: datetime,
        end: datetime,
        *,
        limit: int,
        sessions: frozenset[str] | None = None,
    ) -> list[Msg]:
        """Visible messages created in [start, end)."""
        rows = await self._rows(
            f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE}"
            " AND created_at >= %(start)s AND created_at < %(end)s"
            " ORDER BY created_at, seq LIMIT %(limit)s",
            self._params(scope, sessions, start=start, end=end, limit=limit),
        )
        return [_msg(r) for r in rows]

    async def around(
        self, scope: View, message: Msg, window: int, *, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """Visible messages of the same session within ``window`` positions."""
        # seq is a log position shared with other sessions, so neighbours are counted, not subtracted.
        same = f"SELECT {MSG_COLUMNS} FROM messages WHERE {VISIBLE} AND session_id = %(of)s"
        rows = await self._rows(
            f"({same} AND seq < %(seq)s ORDER BY seq DESC LIMIT %(before)s)"
            f" UNION ALL ({same} AND seq >= %(seq)s ORDER BY seq LIMIT %(after)s) ORDER BY seq",
            self._params(
                scope,
                sessions,
                of=message.session_id,
                seq=message.seq,
                before=window,
                after=window + 1,
            ),
        )
        return [_msg(r) for r in rows]
