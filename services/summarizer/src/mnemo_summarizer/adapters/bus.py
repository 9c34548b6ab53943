"""The summarizer's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from mnemo_runtime.work import DeadLetters, message_deliveries
from mnemo_schema import subjects
from mnemo_summarizer.service import SummarizerService


async def consume(
    js: JetStreamContext,
    service: SummarizerService,
    stop: asyncio.Event,
    fetch: int,
    ack_wait: float,
    dead: DeadLetters,
) -> None:
    """Feed the service from the durable consumer until ``stop``."""
    async for deliveries in message_deliveries(
        js, subjects.SUMMARIZER_DURABLE, stop, fetch=fetch, ack_wait=ack_wait, dead=dead
    ):
        await service.deliver(deliveries)
