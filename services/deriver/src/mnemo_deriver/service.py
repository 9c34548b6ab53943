"""Deliveries in, batches through the model in fair turns, observations out; acknowledgements last.

Each representation's batches form one line, derived one batch at a time and in order
(``scheduling``); the lines of all workspaces share ``max_concurrent_batches`` slots, taken in
turns, and ``reserved_slots`` more are kept for a workspace that has nothing running. A
delivered message is acknowledged only once every representation it feeds has its batch done (derived and published, or parked as a dead letter) and that line's progress is
recorded, so the queue status never counts work that a crash would leave unfinished.

A batch of a conversation, a workspace whose representations each wait one batch at most, is
derived as foreground work (a person is waiting for it, see ``mnemo_runtime.precedence``): each
representation observing a new message, a group's many included; the batches of a backlog, a
workspace with more than one batch waiting in a line, start as background steps, after it.

A model outage, or the database or the bus being away, puts the batch back at the head of its
line to be tried again after ``retry_delay_s``, without limit. Any other failure is the work's
own: a batch of several messages is split and each message derived alone, so one message that
cannot be derived holds back no other; a message that still fails is tried again until it has
failed ``max_attempts`` times (deliveries by the bus included) and then parked.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mnemo_deriver.batching import Batch, Batcher, Item, RepKey
from mnemo_deriver.extraction import extract
from mnemo_deriver.held import HeldMessages, Pending
from mnemo_deriver.ports import DeadLetters, ObservationLog, Progress, TurnLog
from mnemo_deriver.rereads import Rereads
from mnemo_deriver.scheduling import FairQueue
from mnemo_deriver.settings import DeriverSettings
from mnemo_deriver.turns import PrecedingTurns, Turn, resolve_turns
from mnemo_runtime.deadletters import Reparked, transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.models import ChatModel, MalformedOutput, ModelRejected, ModelUnavailable
from mnemo_runtime.precedence import precedence
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted

log = get_logger("mnemo.deriver")
_tracer = tracer("mnemo.deriver")

# What became of a batch: derived, parked as a dead letter, or to be tried again.
Outcome = Literal["done", "parked", "retry"]


@dataclass
class _Result:
    outcome: Outcome
    # For a retry: the batches to put back at the head of the line, and after how long.
    again: list[Batch] = field(default_factory=list)
    delay: float = 0.0


class DeriverService:
    def __init__(
        self,
        settings: DeriverSettings,
        model: ChatModel,
        log_: ObservationLog,
        dead_letters: DeadLetters,
        progress: Progress,
        turn_log: TurnLog,
        clock: Callable[[], float] = time.monotonic,
        rereads: Rereads | None = None,
    ) -> None:
        self._s = settings
        self._model = model
        self._log = log_
        self._dead = dead_letters
        self._progress = progress
        self._turn_log = turn_log
        self._clock = clock
        self.batcher = Batcher(settings.token_target, settings.idle_s, settings.max_age_s)
        self.queue = FairQueue()
        self._turns = PrecedingTurns()
        self.held = HeldMessages(settings.held_messages)
        self._partition: dict[str, int] = {}  # workspace -> its partition
        self._failures: Counter[tuple[int, RepKey]] = Counter()
        self._running: Counter[RepKey] = Counter()
        self._waiting: dict[RepKey, asyncio.TimerHandle] = {}
        self._leaving: set[int] = set()  # partitions being handed over
        self._work: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        # Letting go of a workspace's messages past its share, read again later (None: every
        # delivered message is held, up to the durable's limit).
        self.rereads = rereads
        if rereads is not None:
            rereads.attach(self.held, self._take_again)

    async def deliver(self, partition: int, deliveries: list[Delivery]) -> None:
        """Take delivered messages of ``partition`` into their representations' batches (or
        let them go, past their workspace's share: ``rereads``)."""
        now = self._clock()
        for d in deliveries:
            e = d.event
            self._partition[e.workspace] = partition
            pending = self.held.get(d.seq)
            if pending is not None:
                if pending.again:  # held as read again: that settles it, not this delivery
                    await _ack(d)
                else:  # delivered again while its batches wait or run: the newest settles it
                    pending.delivery = d
                continue
            if self.rereads is not None and await self.rereads.let_go(
                partition, d, self.held.count(e.workspace)
            ):
                continue
            await self._take(partition, d, self._turns.delivered(partition, d.seq, e), now)
        self._pump()

    def wanted(self, subject: str, seq: int) -> bool:
        """Whether a delivery is to be decoded (``Rereads.wanted``)."""
        return self.rereads is None or self.rereads.wanted(subject, seq)

    async def _take(
        self, partition: int, d: Delivery, turn: Turn, now: float, *, again: bool = False
    ) -> None:
        """Hold ``d`` and add it to its representations' batches."""
        e = d.event
        if not e.representations or not e.reasoning:
            # No representation to feed, or reasoning switched off for it (no work unit is
            # counted); it still is the turn before the session's next message.
            await d.ack()
            return
        owner = self.held.hold(d, len(e.representations), partition, again=again)
        context = turn.message if turn.message and turn.message.peer_id != e.peer_id else None
        for rep in e.representations:
            key = RepKey(e.workspace, rep.observer, rep.observed, e.instructions)
            item = Item(d.seq, e, context, owner, context_unknown=turn.unknown)
            for batch in self.batcher.add(key, item, now):
                self.queue.put(batch)

    async def _take_again(self, partition: int, d: Delivery, turn: Turn) -> None:
        """Take a message read again from the log (``rereads``)."""
        await self._take(partition, d, turn, self._clock(), again=True)
        self._pump()

    async def resume(self, partition: int, floor: int) -> None:
        """``partition`` is taken (its durable delivers again after ``floor``): read again what
        its previous owner let go."""
        if self.rereads is not None:
            await self.rereads.resume(partition, floor)

    async def tend(self) -> None:
        """Start, stop and record the re-reads of let-go messages (``rereads``)."""
        if self.rereads is not None and self.rereads.gaps:
            await self.rereads.tend(self.held.full, lambda p: p in self._leaving)

    def tick(self) -> int:
        """Queue the batches whose idle or age rule fired; how many."""
        due = self.batcher.due(self._clock())
        for batch in due:
            self.queue.put(batch)
        self._pump()
        return len(due)

    async def flush(self) -> None:
        """Queue every open batch and wait until all queued and running work is done."""
        for batch in self.batcher.drain():
            self.queue.put(batch)
        self._pump()
        while not self._quiet():
            self._idle.clear()
            await self._idle.wait()

    @property
    def in_flight(self) -> int:
        return len(self._work) + len(self.batcher) + len(self.queue) + len(self._waiting)

    async def release(self, partition: int) -> None:
        """Stop working ``partition``: drop what waits, let what runs finish, forget it."""

        def keep(key: RepKey) -> bool:
            return self._partition.get(key.workspace) != partition

        self._leaving.add(partition)
        if self.rereads is not None:
            await self.rereads.pause(partition)
        self.batcher.drop(keep)
        self.queue.drop(keep)
        for key in [k for k in self._waiting if not keep(k)]:
            self._waiting.pop(key).cancel()
        while any(not keep(k) for k in self._running):
            self._idle.clear()
            await self._idle.wait()
        self._leaving.discard(partition)
        if self.rereads is not None:
            await self.rereads.release(partition)
        self.held.forget(partition)
        self._failures = Counter({k: n for k, n in self._failures.items() if keep(k[1])})
        self._turns.forget(partition)

    def _quiet(self) -> bool:
        return not self._work and not len(self.queue) and not self._waiting

    def _pump(self) -> None:
        """Start batches while slots are free, taking the lines in turn. Past
        ``max_concurrent_batches``, the ``reserved_slots`` go only to a workspace with nothing
        running: a backlog that holds every slot makes a newcomer wait for none of its batches."""
        shared, kept = self._s.max_concurrent_batches, self._s.reserved_slots
        while len(self._work) < shared + kept:
            running = {k.workspace for k in self._running}
            batch = self.queue.take(() if len(self._work) < shared else running)
            if batch is None:
                break
            # A conversation, whose representations wait a batch each at most, is one someone
            # waits for: each representation that observes its message (a group's many) is
            # derived as foreground work, not the first alone.
            foreground = not self.queue.backlogged(batch.key.workspace)
            task = asyncio.create_task(self._run(batch, foreground))
            self._work.add(task)
            self._running[batch.key] += 1
            task.add_done_callback(self._finished)
        if self._quiet():
            self._idle.set()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._work.discard(task)
        self._pump()  # its slot is free now
        self._idle.set()  # whoever waits for the work to settle looks again

    async def _run(self, batch: Batch, foreground: bool = False) -> None:
        key = batch.key
        try:
            order = precedence()
            if foreground:
                with order.foreground(key.workspace):
                    result = await self._attempt(batch)
            else:
                await order.background_step("deriver", key.workspace)
                result = await self._attempt(batch, backlog=True)
        except Exception:
            log.exception("deriver.batch_failed", observer=key.observer)
            result = _Result("retry", [batch], self._s.retry_delay_s)
        finally:
            self._running[key] -= 1
            if self._running[key] <= 0:
                del self._running[key]
        if self._partition.get(key.workspace) in self._leaving:
            return  # handed over: the next owner does what is left
        for again in reversed(result.again):
            self.queue.put(again, front=True)
        if result.outcome == "retry" and result.delay > 0:
            loop = asyncio.get_running_loop()
            self._waiting[key] = loop.call_later(result.delay, self._resume, key)
        else:
            self.queue.done(key)

    def _resume(self, key: RepKey) -> None:
        if self._waiting.pop(key, None) is not None:
            self.queue.done(key)
            self._pump()
            self._idle.set()

    async def _attempt(self, batch: Batch, backlog: bool = False) -> _Result:
        """One try at one batch (``backlog``: a backlog's, its observations so marked); what
        to do next."""
        first = batch.items[0].message
        with _tracer.start_as_current_span(
            "deriver.batch",
            context=extract_context(first.trace),
            attributes={
                "messages": len(batch.items),
                "observer": batch.key.observer,
                "observed": batch.key.observed,
            },
        ):
            try:
                await resolve_turns(batch, self._turn_log)
                sessions = batch.sessions
                await self._bookkeeping(self._progress.taken, batch.key, batch.newest, sessions)
                observation_seq = await self._derive(batch, backlog)
                await self._progress.done(batch.key, batch.newest, observation_seq, sessions)
            except (MalformedOutput, ModelRejected) as err:
                return await self._give_up(batch, f"{type(err).__name__}: {err}")
            except Exception as err:
                return await self._failed(batch, err)
        await self._settle(batch)
        return _Result("done")

    async def _failed(self, batch: Batch, err: Exception) -> _Result:
        if transient(err):
            log.warning("deriver.retry_later", error=repr(err), observer=batch.key.observer)
            return _Result("retry", [batch], self._s.retry_delay_s)
        if len(batch.items) > 1:
            log.warning("deriver.batch_split", error=repr(err), messages=len(batch.items))
            return _Result("retry", [batch.alone(i) for i in batch.items], 0.0)
        item = batch.items[0]
        self._failures[(item.seq, batch.key)] += 1
        attempts = self._attempts(batch)
        if attempts < self._s.max_attempts:
            log.warning("deriver.retry_later", error=repr(err), attempt=attempts)
            return _Result("retry", [batch], self._s.retry_delay_s)
        return await self._give_up(batch, repr(err))

    async def _give_up(self, batch: Batch, reason: str) -> _Result:
        """Park the batch as a dead letter; its messages count as done (failed)."""
        try:
            await self._park(batch, reason)
            await self._progress.done(batch.key, batch.newest, 0, batch.sessions)
        except Exception as err:
            if not transient(err):
                raise
            return _Result("retry", [batch], self._s.retry_delay_s)
        await self._settle(batch)
        return _Result("parked")

    async def _derive(self, batch: Batch, backlog: bool = False) -> int:
        """Extract, ground and publish; the newest observation's position (0: none).
        ``backlog``: the observations say they are a backlog's (see ``ObservationWritten``)."""
        extraction = await extract(
            self._model, batch, self._s.max_output_tokens, self._s.structured_attempts
        )
        for d in extraction.dropped:
            log.info("deriver.dropped", reason=d.reason, observer=batch.key.observer)
        events = extraction.events
        if not events:
            return 0
        if backlog:
            events = [e.model_copy(update={"backlog": True}) for e in events]
        # The last one says the batch is through: once it is applied, its messages are formed.
        events[-1] = events[-1].model_copy(update={"formed_through": batch.newest})
        return max(await self._log.publish(events))

    async def _park(self, batch: Batch, reason: str) -> None:
        await self._dead.park(batch.letter(reason, self._attempts(batch)))

    async def redrive(
        self, letter: dict[str, Any], events: list[tuple[int, MessagePosted]]
    ) -> None:
        """Derive a dead letter's messages again, for its representation; raise if they fail.

        An operator's second try: outside the lines, and parked again at once if it fails.
        """
        instructions = events[0][1].instructions if events else None
        key = RepKey(letter["workspace"], letter["observer"], letter["observed"], instructions)
        now = self._clock()
        batch = Batch(key, now, now, [Item(s, e, context_unknown=True) for s, e in events])
        try:
            await resolve_turns(batch, self._turn_log)
            await self._derive(batch)
        except (MalformedOutput, ModelRejected) as err:
            await self._park(batch, f"{type(err).__name__}: {err}")
            raise Reparked from err
        except Exception as err:
            if transient(err):
                raise ModelUnavailable(
                    "the model, the store or the bus is away", attempts=1
                ) from err
            await self._park(batch, repr(err))
            raise Reparked from err

    async def _bookkeeping(self, update: Callable[..., Any], *args: object) -> None:
        """What is being worked on is shown, not relied on: retry briefly, never fail on it."""
        for attempt in range(3):
            try:
                await update(*args)
                return
            except Exception as err:
                log.warning("deriver.progress_failed", attempt=attempt + 1, error=repr(err))
                await asyncio.sleep(0.05 * (attempt + 1))

    async def _settle(self, batch: Batch) -> None:
        """Count the batch's representation done for each message; ack those now complete."""
        for item in batch.items:
            self._failures.pop((item.seq, batch.key), None)
            p = item.owner
            if not isinstance(p, Pending) or not self.held.done_once(item.seq, p):
                continue
            try:
                await p.delivery.ack()
            except Exception as err:  # delivered again after the ack deadline; done again
                log.warning("deriver.ack_failed", seq=item.seq, error=repr(err))

    def _attempts(self, batch: Batch) -> int:
        """Tries of the batch's message: deliveries by the bus plus failures here since."""
        out = 1
        for i in batch.items:
            delivered = i.owner.delivery.attempts if isinstance(i.owner, Pending) else 1
            out = max(out, delivered - 1 + max(1, self._failures[(i.seq, batch.key)]))
        return out


async def _ack(d: Delivery) -> None:
    try:
        await d.ack()
    except Exception as err:
        log.warning("deriver.ack_failed", seq=d.seq, error=repr(err))
