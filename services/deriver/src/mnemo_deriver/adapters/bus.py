"""The deriver's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from mnemo_deriver.service import Delivery, DeriverService
from mnemo_runtime.work import durable_batches, nak_later
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event


async def consume(
    js: JetStreamContext, service: DeriverService, stop: asyncio.Event, fetch: int, ack_wait: float
) -> None:
    """Feed the service from the durable consumer until ``stop``; flush on the way out."""
    ticker = asyncio.create_task(_tick(service, stop))
    try:
        async for msgs in durable_batches(
            js, subjects.MESSAGE_FILTER, subjects.DERIVER_DURABLE, stop,
            fetch=fetch, ack_wait=ack_wait,
        ):  # fmt: skip
            deliveries = []
            for m in msgs:
                event = decode_event(m.data)
                if not isinstance(event, MessagePosted):
                    await m.ack()
                    continue
                seq = int(m.metadata.sequence.stream)
                deliveries.append(Delivery(seq, event, m.ack, nak_later(m)))
            await service.deliver(deliveries)
    finally:
        stop.set()
        await ticker
        await service.flush()


async def _tick(service: DeriverService, stop: asyncio.Event) -> None:
    while not stop.is_set():
        service.tick()
        await asyncio.sleep(0.02)
