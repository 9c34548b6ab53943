"""The summarizer's bus adapter: feeding the service from the durable message consumer."""

from __future__ import annotations

import asyncio
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_runtime.deadletters import DeadLetters, redrive_loop
from mnemo_runtime.work import message_deliveries, stage_consumer
from mnemo_schema import subjects
from mnemo_summarizer.cadence import KINDS
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
    redrives = asyncio.create_task(
        redrive_loop(dead, lambda letter: _redrive(service, letter), stop)
    )
    try:
        async for deliveries in message_deliveries(
            js, subjects.SUMMARIZER_DURABLE, stop, fetch=fetch, ack_wait=ack_wait, dead=dead
        ):
            await service.deliver(deliveries)
    finally:
        stop.set()
        await redrives


async def _redrive(service: SummarizerService, letter: dict[str, Any]) -> None:
    """A lost summary (or a message that could not be counted): the session summarized again."""
    if letter["workspace"] is None or letter["session_id"] is None:
        raise ValueError("the letter names no session to summarize")
    kind = letter["detail"].get("summary_type")
    await service.redrive(letter["workspace"], letter["session_id"], [kind] if kind else KINDS)
