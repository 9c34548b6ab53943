"""``ScopeReader`` over the retrieval engine (the context service), which reads the projections.

Every read carries the scope: observations, searched by meaning and words or read by id, within
their (workspace, observer, observed); messages, searched or read by key, among those that fed
that representation (those whose ``representations`` hold the pair). A view of the whole
workspace has no pair: every message and representation of the workspace is visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypedDict

from mnemo_dialectic.domain import Msg, Obs, View
from mnemo_runtime.retrieval import RetrievalClient
from mnemo_runtime.vectors import Level
from mnemo_schema.retrieval import (
    MAX_MESSAGES,
    MAX_WINDOW,
    MessagesQuery,
    RankedMessage,
    RankedObservation,
    RetrievalQuery,
    StoredMessage,
    StoredObservation,
)


def _msg(m: StoredMessage) -> Msg:
    return Msg(
        id=m.id,
        session_id=m.session_id,
        peer_id=m.peer_id,
        content=m.content,
        created_at=m.created_at,
        seq=m.seq,
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


class _Within(TypedDict):
    observer: str | None
    observed: str | None
    sessions: list[str] | None


def _within(scope: View, sessions: frozenset[str] | None) -> _Within:
    """A query's representation (``scope``'s; none for the whole workspace) and sessions."""
    return {
        "observer": scope.observer,
        "observed": scope.observed,
        "sessions": None if sessions is None else sorted(sessions),
    }


class EngineScopeReader:
    """Reads of one representation (or of the whole workspace), all through the engine."""

    def __init__(self, retrieval: RetrievalClient) -> None:
        self._retrieval = retrieval

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
                **_within(scope, sessions),
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
                **_within(scope, sessions),
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
            **_within(scope, sessions),
        )
        return [_obs(o) for o in found.observations]

    async def messages(
        self, scope: View, ids: Sequence[str], *, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """Visible messages by id."""
        found = await self._retrieval.messages_by_ids(
            scope.workspace,
            ids,
            **_within(scope, sessions),
        )
        return [_msg(m) for m in found.messages]

    async def grep(
        self, scope: View, text: str, *, limit: int, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """Visible messages containing ``text``."""
        return await self._messages(scope, sessions, containing=text, limit=limit)

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
        return await self._messages(
            scope, sessions, created_from=start, created_before=end, limit=limit
        )

    async def around(
        self, scope: View, message: Msg, window: int, *, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        """Visible messages of the same session within ``window`` positions."""
        return await self._messages(scope, sessions, around=message.id, window=window)

    async def _messages(
        self, scope: View, sessions: frozenset[str] | None, **way: Any
    ) -> list[Msg]:
        """The engine's ``MessagesQuery`` in ``scope`` (and ``sessions``), asked ``way``."""
        if "limit" in way:
            way["limit"] = max(1, min(way["limit"], MAX_MESSAGES))
        if "window" in way:
            way["window"] = max(0, min(way["window"], MAX_WINDOW))
        query = MessagesQuery(
            **_within(scope, sessions),
            **way,
        )
        found = await self._retrieval.messages(scope.workspace, query)
        return [_msg(m) for m in found.messages]
