"""The dreamer's handlers: count explicit observations, publish DreamDue, run a dream."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from mnemo_dreamer.domain import ready
from mnemo_dreamer.ports import Memory, Publisher, ScheduleStore
from mnemo_dreamer.session import DreamSession
from mnemo_dreamer.settings import DreamerSettings
from mnemo_dreamer.specialists import DEDUCTION, INDUCTION, Spend, configured, run_specialist
from mnemo_runtime.logging import get_logger
from mnemo_runtime.models import ChatModel, Stage
from mnemo_runtime.progress import Announce, announce_sessions
from mnemo_runtime.vectors.ports import Scope
from mnemo_schema.config import dreams_enabled
from mnemo_schema.dreams import DreamCompleted, DreamDue
from mnemo_schema.ids import derived_event_id
from mnemo_schema.observations import ObservationsErased, ObservationWritten

log = get_logger("mnemo.dreamer")
Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


class Dreamer:
    """Scheduling and dreaming for every representation; state lives in the table and the log."""

    def __init__(
        self,
        settings: DreamerSettings,
        models: dict[Stage, ChatModel],
        memory: Memory,
        publisher: Publisher,
        schedule: ScheduleStore,
        clock: Clock = _now,
        announce: Announce | None = None,
    ) -> None:
        self.settings = settings
        self._models = models
        self._memory = memory
        self._publisher = publisher
        self._schedule = schedule
        self._clock = clock
        self._announce = announce

    async def observed(self, seq: int, event: ObservationWritten) -> None:
        """Count an explicit observation toward the representation's next dream."""
        await self.observed_many([(seq, event)])

    async def observed_many(self, observations: Sequence[tuple[int, ObservationWritten]]) -> None:
        """Count the explicit ones of ``observations`` (at their stream positions, in log
        order) toward their representations' next dreams: one step a representation."""
        seqs: dict[Scope, list[int]] = {}
        for seq, event in observations:
            if event.level == "explicit":
                scope = Scope(event.workspace, event.observer, event.observed)
                seqs.setdefault(scope, []).append(seq)
        now = self._clock()
        for scope, counted in seqs.items():
            await self._schedule.count_explicit(scope, counted, now)

    async def erased(self, event: ObservationsErased) -> None:
        """A representation erased whole (with its peer or workspace) leaves the schedule: no
        dream is due of it, and its ids are kept no longer."""
        if event.whole:
            await self._schedule.forget(Scope(event.workspace, event.observer, event.observed))

    async def tick(self) -> int:
        """Publish a DreamDue for every representation whose dream may start; how many."""
        now = self._clock()
        published = 0
        for s in await self._schedule.ready(now):
            if not ready(s, now):
                continue
            due = DreamDue(
                # One DreamDue per threshold crossing, however often the tick retries it.
                event_id=derived_event_id(
                    "dream-due",
                    s.workspace,
                    s.observer,
                    s.observed,
                    str(s.explicit_count),
                    str(s.explicit_at_last_dream),
                ),
                workspace=s.workspace,
                observer=s.observer,
                observed=s.observed,
                reason="threshold",
                due_at=s.due_at or now,
                explicit_count=s.explicit_count,
            )
            await self._publisher.publish([due])
            await self._schedule.mark_published(
                Scope(s.workspace, s.observer, s.observed), due.event_id
            )
            await self.noted(due)  # a unit of the queue from now on
            published += 1
        return published

    async def noted(self, due: DreamDue) -> None:
        """Note on the bus that ``due``'s dream was asked for, finished or parked (for whoever
        watches queues drain)."""
        sessions = [due.session_id] if due.session_id else []
        await announce_sessions(self._announce, due.workspace, sessions)

    async def dream(self, due: DreamDue) -> DreamCompleted | None:
        """Dream over the representation; None when another dream holds it (retry later)."""
        scope = Scope(due.workspace, due.observer, due.observed)
        async with self._schedule.lock(scope) as held:
            if not held:
                return None
            return await self._dream_locked(scope, due)

    async def _dream_locked(self, scope: Scope, due: DreamDue) -> DreamCompleted:
        started = time.perf_counter()
        explicit_seen = (await self._schedule.load(scope)).explicit_count
        session = DreamSession(scope, due.event_id, self._memory, self._publisher)
        spend = Spend()
        cfg = self.settings
        app = await self._memory.configuration(due.workspace, due.session_id)
        if dreams_enabled(app):
            card = await self._memory.card(scope)
            await run_specialist(
                configured(DEDUCTION, app),
                self._models[Stage.DREAMER_DEDUCTION],
                session,
                card,
                max_calls=cfg.deduction_max_calls,
                max_tokens=cfg.max_tokens,
                spend=spend,
            )
            # Induction reads the belief set deduction left, so deduction's edits must be
            # projected.
            if session.last_seq and not await self._memory.wait_applied(
                scope.workspace, session.last_seq, cfg.projection_wait_s
            ):
                log.warning("dreamer.projection_lag", seq=session.last_seq)
            card = await self._memory.card(scope)
            await run_specialist(
                configured(INDUCTION, app),
                self._models[Stage.DREAMER_INDUCTION],
                session,
                card,
                max_calls=cfg.induction_max_calls,
                max_tokens=cfg.max_tokens,
                spend=spend,
            )
        else:
            # Reasoning or dreams are switched off: the dream completes without a model call.
            log.info(
                "dreamer.disabled",
                workspace=due.workspace,
                observer=due.observer,
                observed=due.observed,
            )
        t = session.tally
        done = DreamCompleted(
            event_id=derived_event_id("dream-done", due.workspace, due.event_id),
            workspace=due.workspace,
            observer=due.observer,
            observed=due.observed,
            due_event_id=due.event_id,
            model=spend.model,
            deductive_written=t.deductive,
            inductive_written=t.inductive,
            contradictions_written=t.contradictions,
            deleted=t.deleted,
            card_updated=t.card_updated,
            rejected=t.rejected,
            model_calls=spend.calls,
            input_tokens=spend.input_tokens,
            output_tokens=spend.output_tokens,
            duration_ms=(time.perf_counter() - started) * 1000,
            causation_id=due.event_id,
        )
        await self._publisher.publish([done])
        await self._schedule.complete(scope, self._clock(), explicit_seen)
        await self.noted(due)
        log.info(
            "dreamer.completed",
            workspace=due.workspace,
            observer=due.observer,
            observed=due.observed,
            calls=spend.calls,
            input_tokens=spend.input_tokens,
            output_tokens=spend.output_tokens,
            deductive=t.deductive,
            inductive=t.inductive,
            deleted=t.deleted,
            rejected=t.rejected,
        )
        return done
