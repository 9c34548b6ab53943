"""Work queues on JetStream for the pipeline stages: durable batches, delayed retry, dead letters."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from mnemo_runtime.deadletters import DeadLetters, Letter, undecodable
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects
from mnemo_schema.events import Event, MessagePosted, decode_event

log = get_logger("mnemo.work")


async def decode_or_park(m: Msg, dead: DeadLetters) -> Event | None:
    """The event ``m`` carries, or None once an undecodable one is recorded as a dead letter.

    Anyone with access to the bus can publish on an event subject; one malformed message must
    not stop a stage for good, nor vanish without a trace.
    """
    try:
        return decode_event(m.data)
    except ValidationError as err:
        seq = int(m.metadata.sequence.stream) if m.reply else 0
        await dead.park(Letter.of_event(seq, m.subject, m.data, undecodable(err)))
        return None


def stage_consumer(
    filter_subject: str,
    durable: str,
    *,
    ack_wait: float,
    max_ack_pending: int = 20_000,
    deliver_all: bool = True,
) -> ConsumerConfig:
    """A stage's durable, explicitly acknowledged consumer: what the stage binds to, and what
    ``mnemo migrate`` creates (or updates) ahead of it."""
    return ConsumerConfig(
        durable_name=durable,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL if deliver_all else DeliverPolicy.NEW,
        ack_wait=ack_wait,
        max_ack_pending=max_ack_pending,
        max_deliver=-1,
    )


async def durable_batches(
    js: JetStreamContext,
    filter_subject: str,
    durable: str,
    stop: asyncio.Event,
    *,
    fetch: int = 256,
    ack_wait: float = 120.0,
    deliver_all: bool = True,
) -> AsyncIterator[list[Msg]]:
    """Batches from a durable, explicitly acknowledged consumer, until ``stop``.

    Each fetch wakes on the first message and then takes what is already waiting: one large
    fetch would linger until its batch filled or its timeout passed.
    """
    sub = await js.pull_subscribe(
        filter_subject,
        durable=durable,
        stream=subjects.STREAM,
        config=stage_consumer(filter_subject, durable, ack_wait=ack_wait, deliver_all=deliver_all),
    )
    try:
        while not stop.is_set():
            try:
                msgs = await sub.fetch(1, timeout=0.25)
                with contextlib.suppress(TimeoutError, NatsTimeout):
                    msgs += await sub.fetch(fetch - 1, timeout=0.002)
            except (TimeoutError, NatsTimeout):
                continue
            yield msgs
    finally:
        # Left subscribed, the fetch inbox holds the connection's drain until its timeout (30 s).
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


@dataclass(frozen=True)
class Delivery:
    """One delivered message and how to settle it with the bus."""

    seq: int
    event: MessagePosted
    ack: Callable[[], Awaitable[None]]
    nak: Callable[[float], Awaitable[None]]
    # How many times the bus has delivered it, this time included.
    attempts: int = 1


async def message_deliveries(
    js: JetStreamContext,
    durable: str,
    stop: asyncio.Event,
    *,
    fetch: int = 256,
    ack_wait: float = 120.0,
    dead: DeadLetters,
) -> AsyncIterator[list[Delivery]]:
    """Batches of MessagePosted deliveries for a stage's durable consumer, until ``stop``.

    Other events on message subjects concern no such stage and are acknowledged at once;
    undecodable ones are parked in ``dead`` and acknowledged.
    """
    async for msgs in durable_batches(
        js, subjects.MESSAGE_FILTER, durable, stop, fetch=fetch, ack_wait=ack_wait
    ):
        deliveries = []
        for m in msgs:
            event = await decode_or_park(m, dead)
            if not isinstance(event, MessagePosted):
                await m.ack()
                continue
            seq = int(m.metadata.sequence.stream)
            attempts = int(m.metadata.num_delivered or 1)
            deliveries.append(Delivery(seq, event, m.ack, nak_later(m), attempts))
        yield deliveries


def nak_later(m: Msg) -> Callable[[float], Awaitable[None]]:
    """A callable that hands ``m`` back for redelivery after a delay (seconds)."""

    async def nak(delay: float) -> None:
        await m.nak(delay=delay)

    return nak
