"""An in-memory ``ScopeReader`` for tests: observations per representation, messages with routing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mnemo_dialectic.domain import Msg, Obs, View
from mnemo_dialectic.local import terms
from mnemo_runtime.vectors import Level


def day(text: str) -> datetime:
    """An ISO date or time as a UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass
class FakeReader:
    """Matches by shared words where the real reader embeds; scoping is the same."""

    obs: dict[tuple[str, str, str], list[Obs]] = field(default_factory=dict)
    msgs: list[tuple[Msg, set[tuple[str, str]]]] = field(default_factory=list)
    scopes_read: list[View] = field(default_factory=list)

    def add_obs(self, ws: str, o: Obs) -> Obs:
        self.obs.setdefault((ws, o.observer, o.observed), []).append(o)
        return o

    def add_msg(self, m: Msg, *pairs: tuple[str, str]) -> Msg:
        self.msgs.append((m, set(pairs)))
        return m

    def _scoped(self, scope: View) -> list[Obs]:
        self.scopes_read.append(scope)
        if scope.observer is None or scope.observed is None:
            return [o for (ws, _, _), obs in self.obs.items() if ws == scope.workspace for o in obs]
        return self.obs.get((scope.workspace, scope.observer, scope.observed), [])

    def _visible(self, scope: View, session_id: str | None) -> list[Msg]:
        self.scopes_read.append(scope)
        pair = (scope.observer, scope.observed)
        return [
            m
            for m, pairs in self.msgs
            if (scope.observer is None or pair in pairs)
            and (session_id is None or m.session_id == session_id)
        ]

    async def search(
        self,
        scope: View,
        text: str,
        *,
        limit: int,
        levels: Sequence[Level] | None = None,
        session_id: str | None = None,
        max_distance: float | None = None,  # noqa: ARG002
    ) -> list[Obs]:
        asked = terms(text)
        hits = [
            o
            for o in self._scoped(scope)
            if asked & terms(o.content)
            and (levels is None or o.level in levels)
            and (session_id is None or o.session_id == session_id)
        ]
        return sorted(hits, key=lambda o: -len(asked & terms(o.content)))[:limit]

    async def search_messages(
        self, scope: View, text: str, *, limit: int, session_id: str | None = None
    ) -> list[Msg]:
        asked = terms(text)
        hits = [m for m in self._visible(scope, session_id) if asked & terms(m.content)]
        return sorted(hits, key=lambda m: -len(asked & terms(m.content)))[:limit]

    async def observations(self, scope: View, ids: Sequence[str]) -> list[Obs]:
        by_id = {o.id: o for o in self._scoped(scope)}
        return [by_id[i] for i in ids if i in by_id]

    async def messages(
        self, scope: View, ids: Sequence[str], *, session_id: str | None = None
    ) -> list[Msg]:
        return [m for m in self._visible(scope, session_id) if m.id in ids]

    async def grep(
        self, scope: View, text: str, *, limit: int, session_id: str | None = None
    ) -> list[Msg]:
        found = [m for m in self._visible(scope, session_id) if text.lower() in m.content.lower()]
        return found[:limit]

    async def in_range(
        self,
        scope: View,
        start: datetime,
        end: datetime,
        *,
        limit: int,
        session_id: str | None = None,
    ) -> list[Msg]:
        found = [m for m in self._visible(scope, session_id) if start <= m.created_at < end]
        return found[:limit]

    async def around(
        self, scope: View, message: Msg, window: int, *, session_id: str | None = None
    ) -> list[Msg]:
        same = [m for m in self._visible(scope, session_id) if m.session_id == message.session_id]
        same.sort(key=lambda m: m.seq)
        at = next(i for i, m in enumerate(same) if m.id == message.id)
        return same[max(0, at - window) : at + window + 1]
