"""The deriver's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_deriver.service import DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.work import DeadLetters, message_deliveries, stage_consumer
from mnemo_schema import subjects


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
    try:
        async for deliveries in message_deliveries(
            js, subjects.DERIVER_DURABLE, stop, fetch=fetch, ack_wait=ack_wait, dead=dead
        ):
            await service.deliver(deliveries)
    finally:
        stop.set()
        await ticker
        await service.flush()


async def _tick(service: DeriverService, stop: asyncio.Event) -> None:
    while not stop.is_set():
        service.tick()
        await asyncio.sleep(0.02)
