"""The summarizer's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_runtime.work import DeadLetters, message_deliveries, stage_consumer
from mnemo_schema import subjects
from mnemo_summarizer.service import SummarizerService
from mnemo_summarizer.settings import SummarizerSettings


def consumers(settings: SummarizerSettings) -> list[ConsumerConfig]:
    """The summarizer's durable consumer, as ``consume`` binds to it."""
    return [
        stage_consumer(
            subjects.MESSAGE_FILTER, subjects.SUMMARIZER_DURABLE, ack_wait=settings.ack_wait_s
        )
    ]


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
