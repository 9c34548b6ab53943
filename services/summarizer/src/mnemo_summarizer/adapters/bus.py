"""The summarizer's bus adapters: the durable message consumer and the dead-letter stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event
from mnemo_summarizer.service import Delivery, SummarizerService

log = get_logger("mnemo.summarizer")

STAGE = "summarizer"


class JetStreamDeadLetters:
    """Parks failed work on ``mnemo.dlq.summarizer`` in the dead-letter stream."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def ensure(self) -> None:
        try:
            await self._js.stream_info(subjects.DEAD_LETTER_STREAM)
        except NotFoundError:
            # Another stage may create it at the same moment; either creation is the same stream.
            with contextlib.suppress(Exception):
                await self._js.add_stream(
                    StreamConfig(
                        name=subjects.DEAD_LETTER_STREAM,
                        subjects=[subjects.DEAD_LETTER_SUBJECTS],
                        storage=StorageType.FILE,
                    )
                )

    async def park(self, reason: str, payload: dict[str, object]) -> None:
        body = json.dumps({"stage": STAGE, "reason": reason, **payload}).encode()
        await self._js.publish(subjects.dead_letter_subject(STAGE), body)
        log.error("summarizer.dead_letter", reason=reason)


async def consume(
    js: JetStreamContext,
    service: SummarizerService,
    stop: asyncio.Event,
    fetch: int,
    ack_wait: float,
) -> None:
    """Feed the service from the durable consumer until ``stop``."""
    sub = await js.pull_subscribe(
        subjects.MESSAGE_FILTER,
        durable=subjects.SUMMARIZER_DURABLE,
        stream=subjects.STREAM,
        config=ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=ack_wait,
            max_ack_pending=20_000,
            max_deliver=-1,
        ),
    )
    while not stop.is_set():
        try:
            # Wake on the first message, then take what is already waiting.
            msgs = await sub.fetch(1, timeout=0.25)
            with contextlib.suppress(TimeoutError, NatsTimeout):
                msgs += await sub.fetch(fetch - 1, timeout=0.002)
        except (TimeoutError, NatsTimeout):
            continue
        deliveries = []
        for m in msgs:
            event = decode_event(m.data)
            if not isinstance(event, MessagePosted):
                await m.ack()
                continue
            deliveries.append(Delivery(int(m.metadata.sequence.stream), event, m.ack, _nak(m)))
        await service.deliver(deliveries)


def _nak(m: Msg) -> Callable[[float], Awaitable[None]]:
    async def nak(delay: float) -> None:
        await m.nak(delay=delay)

    return nak
