"""Work queues on JetStream for the pipeline stages: durable batches, delayed retry, dead letters."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects

log = get_logger("mnemo.work")


class DeadLetters:
    """Parks work a stage could not complete on ``mnemo.dlq.<stage>``, with the reason.

    The dead-letter stream keeps it until someone inspects, replays or removes it.
    """

    def __init__(self, js: JetStreamContext, stage: str) -> None:
        self._js = js
        self.stage = stage

    async def ensure(self) -> None:
        """Create the dead-letter stream if missing."""
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
        """Store one piece of failed work."""
        body = json.dumps({"stage": self.stage, "reason": reason, **payload}).encode()
        await self._js.publish(subjects.dead_letter_subject(self.stage), body)
        log.error("work.dead_letter", stage=self.stage, reason=reason)


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
        config=ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL if deliver_all else DeliverPolicy.NEW,
            ack_wait=ack_wait,
            max_ack_pending=20_000,
            max_deliver=-1,
        ),
    )
    while not stop.is_set():
        try:
            msgs = await sub.fetch(1, timeout=0.25)
            with contextlib.suppress(TimeoutError, NatsTimeout):
                msgs += await sub.fetch(fetch - 1, timeout=0.002)
        except (TimeoutError, NatsTimeout):
            continue
        yield msgs


def nak_later(m: Msg) -> Callable[[float], Awaitable[None]]:
    """A callable that hands ``m`` back for redelivery after a delay (seconds)."""

    async def nak(delay: float) -> None:
        await m.nak(delay=delay)

    return nak
