"""The dreamer's consumers: explicit observations feed the schedule (an erased representation
leaves it), DreamDue starts a dream."""

from __future__ import annotations

import asyncio
import contextlib
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
    fetched batch's observations of one representation in one step."""
    async for msgs in durable_batches(js, consumers(dreamer.settings)[0], stop, fetch=200):
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
        settled: set[int] = set()
        for key, (m, seq, gone) in erased.items():
            try:
                await dreamer.erased(gone)
            except Exception as err:
                # Tried again later, and what followed it of the representation with it, so
                # that the schedule still sees them in log order.
                log.warning("dreamer.forget_retry_later", error=repr(err))
                for later, at in [(m, seq), *((g[0], g[1]) for g in groups.pop(key, []))]:
                    settled.add(at)
                    await later.nak(delay=FAILED_RETRY_S)
        for group in groups.values():
            try:
                await dreamer.observed_many([(seq, e) for _, seq, e in group])
            except Exception as err:
                for m, seq, event in group:
                    settled.add(seq)
                    if transient(err) or int(m.metadata.num_delivered or 1) < (
                        dreamer.settings.max_attempts
                    ):
                        log.warning("dreamer.count_retry_later", error=repr(err))
                        await m.nak(delay=FAILED_RETRY_S)
                    else:
                        await dead.park(Letter.of_event(seq, m.subject, m.data, repr(err), event))
                        await m.ack()
        for m in msgs:
            if int(m.metadata.sequence.stream) not in settled:
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
            msgs = await pull.fetch(1, timeout=0.25)
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
                workspace=letter["workspace"], observer=letter["observer"],
                observed=letter["observed"], reason="requested", due_at=utcnow(),
            )
        ]
    )  # fmt: skip
