"""The deriver's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_deriver.service import DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.deadletters import DeadLetters, redrive_loop
from mnemo_runtime.work import message_deliveries, stage_consumer
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event


def consumers(settings: DeriverSettings) -> list[ConsumerConfig]:
    """The deriver's durable consumer, as ``consume`` binds to it."""
    return [
        stage_consumer(
            subjects.MESSAGE_FILTER, subjects.DERIVER_DURABLE, ack_wait=settings.ack_wait_s
        )
    ]


async def consume(
    js: JetStreamContext,
    service: DeriverService,
    stop: asyncio.Event,
    fetch: int,
    ack_wait: float,
    dead: DeadLetters,
) -> None:
    """Feed the service from the durable consumer until ``stop``; flush on the way out."""
    ticker = asyncio.create_task(_tick(service, stop))
    redrives = asyncio.create_task(
        redrive_loop(dead, lambda letter: _redrive(js, service, letter), stop)
    )
    try:
        async for deliveries in message_deliveries(
            js, subjects.DERIVER_DURABLE, stop, fetch=fetch, ack_wait=ack_wait, dead=dead
        ):
            await service.deliver(deliveries)
    finally:
        stop.set()
        await ticker
        await redrives
        await service.flush()


async def _redrive(js: JetStreamContext, service: DeriverService, letter: dict[str, Any]) -> None:
    """A dead letter's messages, read again from the log (or corrected), derived again."""
    seqs = [int(s) for s in letter["detail"].get("seqs") or [letter["stream_seq"]] if s]
    events: list[tuple[int, MessagePosted]] = []
    for seq in seqs:
        fixed = letter["fixed_data"] if len(seqs) == 1 else None
        data = bytes(fixed) if fixed is not None else (await js.get_msg(subjects.STREAM, seq)).data
        event = decode_event(data or b"")
        if not isinstance(event, MessagePosted):
            raise ValueError(f"the event at {seq} is a {event.type}, not a posted message")
        events.append((seq, event))
    if letter["observer"] is None or letter["observed"] is None:
        # An event that did not decode when delivered: derive it for every representation.
        for seq, event in events:
            for rep in event.representations:
                scoped = {**letter, "observer": rep.observer, "observed": rep.observed,
                          "workspace": event.workspace}  # fmt: skip
                await service.redrive(scoped, [(seq, event)])
        return
    await service.redrive(letter, events)


async def _tick(service: DeriverService, stop: asyncio.Event) -> None:
    while not stop.is_set():
        service.tick()
        await asyncio.sleep(0.02)
