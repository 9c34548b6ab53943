"""What a partition's projector receives from the log, and how much of it it holds.

An ordered push consumer: the server sends new events as they are stored, with flow control and
gap detection handled by the client; nothing is acknowledged because the position lives in
Postgres. Received events go into the projector's ``Lines`` as their bytes (``Delivered``
decodes them when their batch is applied), at most ``max_held`` of them: past it the intake
stops receiving, lets go of what came past the limit, and once half are applied subscribes
again from the last event it took, so a backlog waits in the log instead of in memory.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from mnemo_projector.lines import Lines
from mnemo_projector.quarantine import Delivered
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects

log = get_logger("mnemo.projector")


class Intake:
    """One partition's subscription to its projection's events, bounded by ``max_held``."""

    def __init__(
        self, js: JetStreamContext, filters: list[str], max_held: int, name: str, partition: int
    ) -> None:
        self._js = js
        self._filters = filters
        self.max_held = max_held
        self._name = name
        self._partition = partition
        self._inbox: asyncio.Queue[Msg] = asyncio.Queue()
        self._sub: Any = None
        # Events held when last counted, and how often receiving paused.
        self.held = 0
        self.pauses = 0

    @property
    def receiving(self) -> bool:
        return self._sub is not None

    async def start(self, start: int) -> None:
        """Receive from ``start`` on (a fresh inbox)."""
        await self.close()
        self._inbox = asyncio.Queue()
        await self._subscribe(start)

    async def next(self, timeout: float) -> Delivered:
        """The next event received, waiting up to ``timeout`` (TimeoutError)."""
        return Delivered.of(await asyncio.wait_for(self._inbox.get(), timeout))

    async def take_into(self, lines: Lines) -> None:
        """Put what was received into ``lines``, up to the limit; stop receiving at it, and
        receive again from the log once ``lines`` holds half of it."""
        inbox = self._inbox
        while not inbox.empty() and len(lines) < self.max_held:
            lines.put(Delivered.of(inbox.get_nowait()))
        self.held = len(lines)
        if self._sub is not None and len(lines) >= self.max_held:
            await self.close()
            while not inbox.empty():
                inbox.get_nowait()  # past the limit: read from the log again on resuming
            self.pauses += 1
            log.info(
                "projector.receiving_paused",
                projection=self._name,
                partition=self._partition,
                held=len(lines),
            )
        elif self._sub is None and len(lines) <= self.max_held // 2:
            await self._subscribe(lines.received + 1)

    async def close(self) -> None:
        """Stop receiving."""
        sub, self._sub = self._sub, None
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception:
                log.debug("projector.unsubscribe_failed")

    async def _subscribe(self, start: int) -> None:
        several = len(self._filters) > 1
        self._sub = await self._js.subscribe(
            self._filters[0],
            stream=subjects.STREAM,
            cb=self._inbox.put,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            config=ConsumerConfig(
                opt_start_seq=start,
                mem_storage=True,
                filter_subjects=self._filters if several else None,
            ),
            idle_heartbeat=5.0,
        )
