"""In-memory fakes of the dreamer's ports: a representation that projects what is published."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest

from mnemo_dreamer.domain import Schedule, on_completed, on_explicit
from mnemo_dreamer.ports import Observation, SourceMessage
from mnemo_dreamer.service import Dreamer
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.models import ChatModel, Stage
from mnemo_runtime.models.scripted import ScriptedModel, ScriptStep, text_reply
from mnemo_runtime.vectors.ports import Scope
from mnemo_schema.config import WorkspaceConfiguration
from mnemo_schema.envelope import Envelope
from mnemo_schema.grounding import CitedMessage, Rejected, RepresentationKey, verdicts
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationWritten,
    PeerCardUpdated,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
SCOPE = Scope("ws", "alice", "alice")

E = TypeVar("E", bound=Envelope)


class FakeMemory:
    """One workspace's observations; deleted ones stay, flagged, as in the table."""

    def __init__(self) -> None:
        self.rows: dict[str, Observation] = {}
        self.deleted: dict[str, str] = {}
        self.order: list[str] = []
        self.cards: dict[Scope, list[str]] = {}
        self.configs: dict[tuple[str, str | None], WorkspaceConfiguration] = {}
        self.messages: dict[str, SourceMessage] = {}

    def add(
        self,
        oid: str,
        content: str,
        *,
        level: str = "explicit",
        day: int = 0,
        premises: Sequence[str] = (),
        review: bool = False,
    ) -> None:
        self.rows[oid] = Observation(
            oid,
            level,
            content,
            T0 + timedelta(days=day),
            tuple(premises),
            (f"m-{oid}",),
            review,
        )
        self.order.append(oid)
        self.messages[f"m-{oid}"] = SourceMessage(f"m-{oid}", "alice", content, T0)

    def live(self) -> list[Observation]:
        return [self.rows[i] for i in reversed(self.order) if i not in self.deleted]

    async def recent(
        self, scope: Scope, limit: int, levels: Sequence[str] = ()
    ) -> list[Observation]:
        return [o for o in self.live() if not levels or o.level in levels][:limit]

    async def get(self, scope: Scope, ids: Sequence[str]) -> list[Observation]:
        live = {o.id: o for o in self.live()}
        return [live[i] for i in ids if i in live]

    async def similar(
        self, scope: Scope, query: str, limit: int, levels: Sequence[str] = ()
    ) -> list[Observation]:
        words = set(query.casefold().split())
        hits = [o for o in self.live() if words & set(o.content.casefold().split())]
        return [o for o in hits if not levels or o.level in levels][:limit]

    async def sources(self, scope: Scope, message_ids: Sequence[str]) -> list[SourceMessage]:
        return [self.messages[m] for m in message_ids if m in self.messages]

    async def card(self, scope: Scope) -> list[str] | None:
        return self.cards.get(scope)

    async def configuration(
        self, workspace: str, session_id: str | None = None
    ) -> WorkspaceConfiguration:
        return self.configs.get((workspace, session_id), WorkspaceConfiguration())

    async def check(self, events: Sequence[ObservationWritten]) -> list[Rejected | None]:
        """The store's own rule (``grounding.verdicts``) over this memory's rows and messages
        (each message feeding ``SCOPE``'s representation)."""
        feeds = [{"observer": SCOPE.observer, "observed": SCOPE.observed}]
        cited = {
            (SCOPE.workspace, m.id): CitedMessage(m.content, feeds) for m in self.messages.values()
        }
        live = {o.id for o in self.live()}

        async def resolve(key: RepresentationKey, ids: Sequence[str]) -> dict[str, str]:
            return {
                i: i
                for i in ids
                if key == (SCOPE.workspace, SCOPE.observer, SCOPE.observed) and i in live
            }

        reasons = await verdicts(events, cited, resolve)
        return [None if r is None else Rejected(r) for r in reasons]

    async def wait_applied(self, workspace: str, seq: int, timeout: float) -> bool:
        return True

    def apply(self, event: Envelope) -> None:
        if isinstance(event, ObservationWritten) and event.observation_id not in self.rows:
            self.rows[event.observation_id] = Observation(
                event.observation_id,
                event.level,
                event.content,
                event.occurred_at,
                tuple(event.premise_ids),
                (),
                False,
                event.confidence,
                event.pattern_type,
            )
            self.order.append(event.observation_id)
        elif isinstance(event, ObservationDeleted):
            self.deleted[event.observation_id] = event.reason
            for o in self.live():
                if event.observation_id in o.premise_ids:
                    self.rows[o.id] = replace(o, needs_review=True)
        elif isinstance(event, PeerCardUpdated):
            self.cards[Scope(event.workspace, event.observer, event.observed)] = list(event.card)


class FakePublisher:
    """The log: keeps every event, drops a repeated event id, projects into the memory."""

    def __init__(self, memory: FakeMemory | None = None) -> None:
        self.events: list[Envelope] = []
        self._ids: set[str] = set()
        self._memory = memory

    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        for e in events:
            if e.event_id in self._ids:
                continue
            self._ids.add(e.event_id)
            self.events.append(e)
            if self._memory is not None:
                self._memory.apply(e)
        return [len(self.events)] * len(events)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


class FakeSchedule:
    """The dream_schedule table as a dict; the lock as a set of held representations."""

    def __init__(self, settings: DreamerSettings) -> None:
        self.rows: dict[Scope, Schedule] = {}
        self.applied: dict[Scope, int] = {}
        self.held: set[Scope] = set()
        self._settings = settings

    async def count_explicit(
        self, scope: Scope, seqs: Sequence[int], now: datetime
    ) -> Schedule | None:
        new = [seq for seq in seqs if seq > self.applied.get(scope, 0)]
        if not new:
            return None
        self.applied[scope] = max(new)
        s = on_explicit(await self.load(scope), now, self._settings, len(new))
        self.rows[scope] = s
        return s

    async def load(self, scope: Scope) -> Schedule:
        return self.rows.get(scope) or Schedule(scope.workspace, scope.observer, scope.observed)

    async def forget(self, scope: Scope) -> None:
        self.rows.pop(scope, None)
        self.applied.pop(scope, None)

    async def ready(self, now: datetime) -> list[Schedule]:
        return [
            s for s in self.rows.values() if s.due_at and not s.due_event_id and s.due_at <= now
        ]

    async def mark_published(self, scope: Scope, due_event_id: str) -> None:
        self.rows[scope] = replace(await self.load(scope), due_event_id=due_event_id)

    async def complete(self, scope: Scope, now: datetime, explicit_seen: int) -> None:
        self.rows[scope] = on_completed(await self.load(scope), now, explicit_seen, self._settings)

    @asynccontextmanager
    async def lock(self, scope: Scope) -> AsyncIterator[bool]:
        if scope in self.held:
            yield False
            return
        self.held.add(scope)
        try:
            yield True
        finally:
            self.held.discard(scope)


class Clock:
    """A settable clock for the scheduler."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class World:
    settings: DreamerSettings
    memory: FakeMemory
    log: FakePublisher
    schedule: FakeSchedule
    clock: Clock

    def dreamer(
        self, *steps: ScriptStep, model: ChatModel | None = None, induction: ChatModel | None = None
    ) -> Dreamer:
        deduction = model or ScriptedModel(*steps, otherwise=lambda _r: text_reply("done"))
        return Dreamer(
            self.settings,
            {
                Stage.DREAMER_DEDUCTION: deduction,
                Stage.DREAMER_INDUCTION: induction
                or ScriptedModel(otherwise=lambda _r: text_reply("done")),
            },
            self.memory,
            self.log,
            self.schedule,
            self.clock,
        )


@pytest.fixture
def world() -> World:
    settings = DreamerSettings(min_new_observations=3, min_interval_s=300, idle_s=10)
    memory = FakeMemory()
    return World(settings, memory, FakePublisher(memory), FakeSchedule(settings), Clock())
