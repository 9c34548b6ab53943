"""Deliveries in, batches through the model, observations out; acknowledgements last.

A delivered message is acknowledged only once every representation it feeds has its batch
processed (or parked as a dead letter). A model outage, or the database or the bus being away,
hands the message back for redelivery, without limit. Any other failure is the work's own: a
batch of several messages is then split and each message derived alone, so one message that
cannot be derived holds back no other; a message that still fails is tried again up to
``max_attempts`` deliveries and then parked as a dead letter with the reason.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from mnemo_deriver.batching import Batch, Batcher, Item, RepKey
from mnemo_deriver.extraction import extract
from mnemo_deriver.ports import DeadLetters, Grounding, ObservationLog, Progress
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.deadletters import Letter, Reparked, transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.models import ChatModel, MalformedOutput, ModelRejected, ModelUnavailable
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted

log = get_logger("mnemo.deriver")
_tracer = tracer("mnemo.deriver")


@dataclass
class _Pending:
    delivery: Delivery
    remaining: int
    failed: bool = False


Unit = tuple[str, str, str, str]
# What became of a batch: derived, parked as a dead letter, or handed back for another try.
Outcome = Literal["done", "parked", "requeued"]


def _units(batch: Batch) -> dict[Unit, int]:
    k = batch.key
    return dict(
        Counter((k.workspace, i.message.session_id, k.observer, k.observed) for i in batch.items)
    )


class DeriverService:
    def __init__(
        self,
        settings: DeriverSettings,
        model: ChatModel,
        log_: ObservationLog,
        grounding: Grounding,
        dead_letters: DeadLetters,
        progress: Progress,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._s = settings
        self._model = model
        self._log = log_
        self._grounding = grounding
        self._dead = dead_letters
        self._progress = progress
        self._clock = clock
        self.batcher = Batcher(settings.token_target, settings.idle_s, settings.max_age_s)
        self._pending: dict[int, _Pending] = {}
        # The last message of each session, so a batch can show the turn before each message.
        self._last: dict[tuple[str, str], MessagePosted] = {}
        self._work: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(settings.max_concurrent_batches)

    async def deliver(self, deliveries: list[Delivery]) -> None:
        """Take delivered messages into their representations' batches."""
        started: Counter[Unit] = Counter()
        full: list[Batch] = []
        now = self._clock()
        for d in deliveries:
            e = d.event
            prev = self._last.get((e.workspace, e.session_id))
            self._last[(e.workspace, e.session_id)] = e
            context = prev if prev is not None and prev.peer_id != e.peer_id else None
            pending = self._pending.get(d.seq)
            idle = not e.representations or not e.reasoning
            if idle or (pending is not None and not pending.failed):
                # No representation to feed, or reasoning switched off for it (no work unit is
                # counted); or a redelivery of a message whose batches are still running (it is
                # acknowledged when they finish).
                if idle:
                    await d.ack()
                continue
            owner = self._pending[d.seq] = _Pending(d, remaining=len(e.representations))
            for rep in e.representations:
                key = RepKey(e.workspace, rep.observer, rep.observed, e.instructions)
                started[(e.workspace, e.session_id, rep.observer, rep.observed)] += 1
                batch = self.batcher.add(key, Item(d.seq, e, context, owner), now)
                if batch is not None:
                    full.append(batch)
        if started:
            await self._record(self._progress.started, dict(started))
        for batch in full:
            self._spawn(batch)

    def tick(self) -> int:
        """Start the batches whose idle or age rule fired; how many started."""
        due = self.batcher.due(self._clock())
        for batch in due:
            self._spawn(batch)
        return len(due)

    async def flush(self) -> None:
        """Process every open batch and wait for all work in flight."""
        for batch in self.batcher.drain():
            self._spawn(batch)
        while self._work:
            await asyncio.gather(*list(self._work))

    @property
    def in_flight(self) -> int:
        return len(self._work) + len(self.batcher)

    def _spawn(self, batch: Batch) -> None:
        task = asyncio.create_task(self._guarded(batch))
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def _guarded(self, batch: Batch) -> None:
        async with self._slots:
            try:
                await self.process(batch)
            except Exception:
                # Settling failed (the bus or the database is down): forget the messages so
                # their redelivery after the ack deadline starts them afresh.
                log.exception("deriver.batch_failed", observer=batch.key.observer)
                for item in batch.items:
                    if isinstance(item.owner, _Pending):
                        item.owner.failed = True

    async def process(self, batch: Batch, redriven: bool = False) -> Outcome:
        """One model call for one batch; publish what is grounded; settle the messages.

        ``redriven``: an operator's second try of a dead letter, which is not counted in the
        queue's progress again and is parked at once if it fails again.
        """
        count = not redriven
        first = batch.items[0].message
        with _tracer.start_as_current_span(
            "deriver.batch",
            context=extract_context(first.trace),
            attributes={"messages": len(batch.items), "observer": batch.key.observer,
                        "observed": batch.key.observed},
        ):  # fmt: skip
            try:
                last_seq = await self._derive(batch)
            except (MalformedOutput, ModelRejected) as err:
                await self._park(batch, f"{type(err).__name__}: {err}")
                await self._settle(batch, 0, count)
                return "parked"
            except Exception as err:
                if transient(err):
                    log.warning("deriver.retry_later", error=repr(err), observer=batch.key.observer)
                    await self._requeue(batch, count)
                    return "requeued"
                if len(batch.items) > 1:
                    log.warning("deriver.batch_split", error=repr(err), messages=len(batch.items))
                    outcomes = {await self.process(_alone(batch, i), redriven) for i in batch.items}
                    return next((o for o in ("requeued", "parked") if o in outcomes), "done")
                if not redriven and _attempts(batch) < self._s.max_attempts:
                    log.warning("deriver.retry_later", error=repr(err), attempt=_attempts(batch))
                    await self._requeue(batch, count)
                    return "requeued"
                await self._park(batch, repr(err))
                await self._settle(batch, 0, count)
                return "parked"
        await self._settle(batch, last_seq, count)
        return "done"

    async def _derive(self, batch: Batch) -> int:
        """Extract, ground and publish; the newest observation's position (0: none)."""
        extraction = await extract(
            self._model, batch, self._s.max_output_tokens, self._s.structured_attempts
        )
        events = extraction.events
        for d in extraction.dropped:
            log.info("deriver.dropped", reason=d.reason, observer=batch.key.observer)
        verdicts = await self._grounding.check(events)
        accepted = [e for e, v in zip(events, verdicts, strict=True) if v is None]
        for e, v in zip(events, verdicts, strict=True):
            if v is not None:
                log.warning("deriver.rejected", observation=e.observation_id, reason=str(v))
        return max(await self._log.publish(accepted)) if accepted else 0

    async def _park(self, batch: Batch, reason: str) -> None:
        k = batch.key
        seqs = [i.seq for i in batch.items]
        await self._dead.park(
            Letter(
                key=f"{k.workspace}/{k.observer}/{k.observed}/{seqs[0]}-{seqs[-1]}",
                reason=reason, stream_seq=seqs[0] if len(seqs) == 1 else None,
                workspace=k.workspace, session_id=batch.items[0].message.session_id,
                observer=k.observer, observed=k.observed, attempts=_attempts(batch),
                detail={"seqs": seqs, "message_ids": [i.message.message_id for i in batch.items]},
            )
        )  # fmt: skip

    async def redrive(
        self, letter: dict[str, Any], events: list[tuple[int, MessagePosted]]
    ) -> None:
        """Derive a dead letter's messages again, for its representation; raise if they fail."""
        instructions = events[0][1].instructions if events else None
        key = RepKey(letter["workspace"], letter["observer"], letter["observed"], instructions)
        now = self._clock()
        outcome = await self.process(Batch(key, now, now, [Item(s, e) for s, e in events]), True)
        if outcome == "parked":
            raise Reparked
        if outcome == "requeued":
            raise ModelUnavailable("the model, the store or the bus is away", attempts=1)

    async def _record(self, update: Callable[..., Awaitable[None]], *args: object) -> None:
        """Progress is bookkeeping for the queue status: retry it briefly, never fail work on it."""
        for attempt in range(3):
            try:
                await update(*args)
                return
            except Exception as err:
                log.warning("deriver.progress_failed", attempt=attempt + 1, error=repr(err))
                await asyncio.sleep(0.05 * (attempt + 1))

    def _release(self, item: Item) -> _Pending | None:
        """Count one representation of ``item``'s message as done; its delivery if all are."""
        p = item.owner
        if not isinstance(p, _Pending):
            return None
        p.remaining -= 1
        if p.remaining > 0:
            return None
        if self._pending.get(item.seq) is p:
            del self._pending[item.seq]
        return p

    async def _settle(self, batch: Batch, last_seq: int, count: bool = True) -> None:
        for item in batch.items:
            p = self._release(item)
            if p is not None and not p.failed:
                await p.delivery.ack()
        if count:
            await self._record(self._progress.finished, _units(batch), last_seq)

    async def _requeue(self, batch: Batch, count: bool = True) -> None:
        # The message comes back whole: every representation it feeds is derived again, and the
        # derived ids make the repeats harmless.
        for item in batch.items:
            p = item.owner
            if isinstance(p, _Pending) and not p.failed:
                p.failed = True
                await p.delivery.nak(self._s.retry_delay_s)
            self._release(item)
        if count:
            await self._record(self._progress.requeued, _units(batch))


def _alone(batch: Batch, item: Item) -> Batch:
    """One message of ``batch`` as a batch of its own."""
    return Batch(batch.key, batch.opened_at, batch.last_added_at, [item])


def _attempts(batch: Batch) -> int:
    """How often the bus has delivered the batch's messages (the most of any)."""
    counts = [i.owner.delivery.attempts for i in batch.items if isinstance(i.owner, _Pending)]
    return max(counts, default=1)
