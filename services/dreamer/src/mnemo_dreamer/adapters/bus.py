"""The dreamer's consumers: explicit observations feed the schedule (an erased representation
leaves it), DreamDue starts a dream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_dreamer.service import Dreamer
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters, Letter, transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.work import DurablePull, decode_or_park, durable_batches, stage_consumer
from mnemo_schema import subjects
from mnemo_schema.dreams import DREAM_FILTER, DREAM_SCHEDULER_DURABLE, DREAMER_DURABLE, DreamDue
from mnemo_schema.envelope import utcnow
from mnemo_schema.observations import ObservationsErased, ObservationWritten

log = get_logger("mnemo.dreamer")
LOCKED_RETRY_S = 5.0
FAILED_RETRY_S = 30.0


# The schedule's consumer only counts observations: a short redelivery wait is enough.
SCHEDULE_ACK_WAIT_S = 30.0
# A schedule step that failed is tried again after this long, then twice as long each time, up
# to the last.
RETRY_FIRST_S = 0.5
RETRY_MAX_S = 10.0


def consumers(settings: DreamerSettings) -> list[ConsumerConfig]:
    """The dreamer's durable consumers: the schedule's, then the dreams'."""
    return [
        stage_consumer(
            subjects.OBSERVATION_FILTER, DREAM_SCHEDULER_DURABLE, ack_wait=SCHEDULE_ACK_WAIT_S
        ),
        stage_consumer(
            DREAM_FILTER, DREAMER_DURABLE, ack_wait=settings.ack_wait_s, max_ack_pending=1_000
        ),
    ]


async def consume_observations(
    js: JetStreamContext, dreamer: Dreamer, stop: asyncio.Event, dead: DeadLetters
) -> None:
    """Count explicit observations per representation, in log order, until ``stop``: each
    fetched batch's observations of one representation in one step.

    The schedule is a projection of the log, so a step that fails is tried again in place
    (``_settled``) and nothing after it is taken first: handed back to the bus for later, an
    observation of a representation erased meanwhile would come back after its erasure and
    count it again.
    """
    batches = durable_batches(js, consumers(dreamer.settings)[0], stop, fetch=200)
    async with contextlib.aclosing(batches):
        async for msgs in batches:
            if not await _counted(msgs, dreamer, stop, dead):
                return  # stopping: what is unacknowledged comes back to the next process


async def _counted(
    msgs: list[Msg], dreamer: Dreamer, stop: asyncio.Event, dead: DeadLetters
) -> bool:
    """``msgs`` counted in log order and acknowledged; False if ``stop`` came first."""
    groups: dict[tuple[str, str, str], list[tuple[Msg, int, ObservationWritten]]] = {}
    erased: dict[tuple[str, str, str], tuple[Msg, int, ObservationsErased]] = {}
    for m in msgs:
        event = await decode_or_park(m, dead)
        seq = int(m.metadata.sequence.stream)
        if isinstance(event, ObservationWritten):
            key = (event.workspace, event.observer, event.observed)
            groups.setdefault(key, []).append((m, seq, event))
        elif isinstance(event, ObservationsErased) and event.whole:
            key = (event.workspace, event.observer, event.observed)
            erased[key] = (m, seq, event)
            # What the log held of it before goes with it (in log order).
            groups[key] = [g for g in groups.get(key, []) if g[1] > seq]
    steps: list[Step] = [
        Step([(m, seq, gone)], partial(dreamer.erased, gone)) for m, seq, gone in erased.values()
    ]
    steps += [
        Step(group, partial(dreamer.observed_many, [(seq, e) for _, seq, e in group]))
        for group in groups.values()
        if group
    ]
    kept = _Kept(msgs)
    try:
        for step in steps:
            if not await _settled(step, dreamer.settings.max_attempts, stop, dead, kept):
                return False
    finally:
        kept.close()
    for m in msgs:
        if not m.is_acked:  # parked steps' messages are
            await m.ack()
    return True


@dataclass
class Step:
    """One step of the schedule: its messages (each with its stream position and event) and
    what it does."""

    msgs: list[tuple[Msg, int, Any]]
    run: Callable[[], Awaitable[None]]


class _Kept:
    """A batch's messages kept in progress while a step is tried again, so that the bus does
    not hand them to another consumer meanwhile."""

    def __init__(self, msgs: list[Msg]) -> None:
        self._msgs = msgs
        self._task: asyncio.Task[None] | None = None

    def hold(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._touch())

    async def _touch(self) -> None:
        while True:
            for m in self._msgs:
                with contextlib.suppress(Exception):
                    await m.in_progress()
            await asyncio.sleep(SCHEDULE_ACK_WAIT_S / 3)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


async def _settled(
    step: Step, max_attempts: int, stop: asyncio.Event, dead: DeadLetters, kept: _Kept
) -> bool:
    """Run ``step`` until it succeeds (the infrastructure failing: without limit, waiting longer
    each time) or its work fails ``max_attempts`` times (its events are parked as dead letters
    and acknowledged). False if ``stop`` came first."""
    tries = failures = 0
    delivered = max(int(m.metadata.num_delivered or 1) for m, _, _ in step.msgs)
    while True:
        try:
            await step.run()
            return True
        except Exception as err:
            tries += 1
            if not transient(err):
                failures += 1
                if failures + delivered - 1 >= max_attempts:
                    try:
                        await _park(step, repr(err), dead)
                        return True
                    except Exception as failed:  # the bus or Postgres away: parked later
                        err = failed
            wait = min(RETRY_FIRST_S * 2 ** (tries - 1), RETRY_MAX_S)
            log.warning("dreamer.schedule_retry", error=repr(err), in_s=wait)
            kept.hold()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
            if stop.is_set():
                return False


async def _park(step: Step, reason: str, dead: DeadLetters) -> None:
    for m, seq, event in step.msgs:
        if not m.is_acked:
            await dead.park(Letter.of_event(seq, m.subject, m.data, reason, event))
            await m.ack()


async def tick(dreamer: Dreamer, stop: asyncio.Event) -> None:
    """Publish due dreams from the table every ``tick_s``."""
    while not stop.is_set():
        try:
            await dreamer.tick()
        except Exception:
            log.exception("dreamer.tick_failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), dreamer.settings.tick_s)


async def consume_dreams(
    js: JetStreamContext, dreamer: Dreamer, stop: asyncio.Event, dead: DeadLetters
) -> None:
    """Run each DreamDue; ack it only once its DreamCompleted is in the log."""
    cfg = dreamer.settings
    # Bound again after any outage of the bus, so the dreams resume by themselves.
    pull = DurablePull(js, consumers(cfg)[1])
    slots = asyncio.Semaphore(cfg.max_concurrent_dreams)
    running: set[asyncio.Task[None]] = set()
    try:
        while not stop.is_set():
            await slots.acquire()
            msgs = await pull.first(stop)
            if not msgs:
                slots.release()
                continue
            task = asyncio.create_task(_dream(dreamer, msgs[0], slots, dead))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        for t in list(running):
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await pull.close()


async def _dream(dreamer: Dreamer, m: Msg, slots: asyncio.Semaphore, dead: DeadLetters) -> None:
    heartbeat = asyncio.create_task(_in_progress(m, dreamer.settings.ack_wait_s / 3))
    event = None
    try:
        event = await decode_or_park(m, dead)
        if not isinstance(event, DreamDue):
            await m.ack()
            return
        done = await dreamer.dream(event)
        if done is None:
            await m.nak(delay=LOCKED_RETRY_S)  # another dream holds the representation
        else:
            await m.ack()
    except asyncio.CancelledError:
        raise
    except Exception as err:
        log.exception("dreamer.dream_failed")
        attempts = int(m.metadata.num_delivered or 1)
        if transient(err) or attempts < dreamer.settings.max_attempts:
            await m.nak(delay=FAILED_RETRY_S)
            return
        # A dream that keeps failing is parked; the representation dreams again later.
        seq = int(m.metadata.sequence.stream)
        await dead.park(Letter.of_event(seq, m.subject, m.data, repr(err), event, attempts))
        await m.ack()
        if isinstance(event, DreamDue):
            await dreamer.noted(event)
    finally:
        heartbeat.cancel()
        slots.release()


async def _in_progress(m: Msg, every: float) -> None:
    # A dream can outlast ack_wait; telling the server it is in progress keeps it from redelivering.
    while True:
        await asyncio.sleep(every)
        with contextlib.suppress(Exception):
            await m.in_progress()


async def redrive(js: JetStreamContext, letter: dict[str, Any]) -> None:
    """A dead dream, asked for again: the representation is due a dream now."""
    if letter["workspace"] is None or letter["observer"] is None or letter["observed"] is None:
        raise ValueError("the letter names no representation to dream over")
    await EventPublisher(js).publish(
        [
            DreamDue(
                workspace=letter["workspace"],
                observer=letter["observer"],
                observed=letter["observed"],
                reason="requested",
                due_at=utcnow(),
            )
        ]
    )
