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

    def _visible(self, scope: View, sessions: frozenset[str] | None) -> list[Msg]:
        """The messages that fed ``scope`` (all of the workspace's without a pair), oldest
        first."""
        self.scopes_read.append(scope)
        pair = (scope.observer, scope.observed)
        found = [
            m
            for m, pairs in self.msgs
            if (scope.observer is None or pair in pairs)
            and (sessions is None or m.session_id in sessions)
        ]
        return sorted(found, key=lambda m: (m.created_at, m.seq))

    def _rests_on(self, scope: View, o: Obs) -> set[str]:
        """The sessions an observation rests on: its own, or its premises' (as the store has it)."""
        if not o.premise_ids:
            return {o.session_id or ""}
        by_id = {x.id: x for x in self._scoped(scope)}
        return set().union(*(self._rests_on(scope, by_id[p]) for p in o.premise_ids if p in by_id))

    def _allowed(self, scope: View, o: Obs, sessions: frozenset[str] | None) -> bool:
        return sessions is None or self._rests_on(scope, o) <= sessions

    async def search(
        self,
        scope: View,
        text: str,
        *,
        limit: int,
        levels: Sequence[Level] | None = None,
        sessions: frozenset[str] | None = None,
        max_distance: float | None = None,  # noqa: ARG002
    ) -> list[Obs]:
        asked = terms(text)
        hits = [
            o
            for o in self._scoped(scope)
            if asked & terms(o.content)
            and (levels is None or o.level in levels)
            and self._allowed(scope, o, sessions)
        ]
        return sorted(hits, key=lambda o: -len(asked & terms(o.content)))[:limit]

    async def search_messages(
        self, scope: View, text: str, *, limit: int, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        asked = terms(text)
        hits = [m for m in self._visible(scope, sessions) if asked & terms(m.content)]
        return sorted(hits, key=lambda m: -len(asked & terms(m.content)))[:limit]

    async def observations(
        self, scope: View, ids: Sequence[str], *, sessions: frozenset[str] | None = None
    ) -> list[Obs]:
        by_id = {o.id: o for o in self._scoped(scope)}
        return [by_id[i] for i in ids if i in by_id and self._allowed(scope, by_id[i], sessions)]

    async def messages(
        self, scope: View, ids: Sequence[str], *, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        return [m for m in self._visible(scope, sessions) if m.id in ids]

    async def grep(
        self, scope: View, text: str, *, limit: int, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        found = [m for m in self._visible(scope, sessions) if text.lower() in m.content.lower()]
        return found[:limit]

    async def in_range(
        self,
        scope: View,
        start: datetime,
        end: datetime,
        *,
        limit: int,
        sessions: frozenset[str] | None = None,
    ) -> list[Msg]:
        found = [m for m in self._visible(scope, sessions) if start <= m.created_at < end]
        return found[:limit]

    async def around(
        self, scope: View, message: Msg, window: int, *, sessions: frozenset[str] | None = None
    ) -> list[Msg]:
        # Counted from the message's place, whether or not it is visible itself.
        same = [m for m in self._visible(scope, sessions) if m.session_id == message.session_id]
        same.sort(key=lambda m: m.seq)
        before = [m for m in same if m.seq < message.seq]
        at = [m for m in same if m.seq == message.seq]
        after = [m for m in same if m.seq > message.seq]
        return before[max(0, len(before) - window) :] + at + after[:window]
