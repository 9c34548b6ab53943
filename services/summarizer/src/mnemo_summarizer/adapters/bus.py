"""The summarizer's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from mnemo_runtime.work import durable_batches, nak_later
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event
from mnemo_summarizer.service import Delivery, SummarizerService


async def consume(
    js: JetStreamContext,
    service: SummarizerService,
    stop: asyncio.Event,
    fetch: int,
    ack_wait: float,
) -> None:
    """Feed the service from the durable consumer until ``stop``."""
    async for msgs in durable_batches(
        js, subjects.MESSAGE_FILTER, subjects.SUMMARIZER_DURABLE, stop,
        fetch=fetch, ack_wait=ack_wait,
    ):  # fmt: skip
        deliveries = []
        for m in msgs:
            event = decode_event(m.data)
            if not isinstance(event, MessagePosted):
                await m.ack()
                continue
            deliveries.append(Delivery(int(m.metadata.sequence.stream), event, m.ack, nak_later(m)))
        await service.deliver(deliveries)
