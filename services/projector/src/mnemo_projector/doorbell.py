"""A doorbell: wakes a partition's loop when an event of the kinds it follows is published.

One set of core NATS subscriptions per process, on the subjects as published (the stream's
transform adds the partition only to what it stores); each event rings the partition of its
workspace. A loop waiting on its bell with a timeout looks again when rung, or when the timeout
ends: a ring missed, as across a reconnection, delays it by no more.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects

log = get_logger("mnemo.projector.doorbell")


class Doorbell:
    """Rings the bell of a partition when an event of ``kinds`` (``ent``, ``obs``...) of one of
    its workspaces is published."""

    def __init__(self, nc: NATS, partitions: int, kinds: Sequence[str]) -> None:
        self._nc = nc
        self._partitions = partitions
        self._kinds = tuple(kinds)
        self._bells: dict[int, asyncio.Event] = {}
        self._subscribed = False
        self._lock = asyncio.Lock()

    async def bell(self, partition: int) -> asyncio.Event | None:
        """The event set when ``partition`` has something new (None: no doorbell here)."""
        async with self._lock:
            if not self._subscribed:
                try:
                    for kind in self._kinds:
                        await self._nc.subscribe(subjects.published_filter(kind), cb=self._ring)
                except Exception as err:  # the loops look on a timer instead
                    log.warning("doorbell.unavailable", error=repr(err))
                    return None
                self._subscribed = True
        return self._bells.setdefault(partition, asyncio.Event())

    async def _ring(self, msg: Msg) -> None:
        workspace = subjects.workspace_of_subject(msg.subject)
        if workspace is not None:
            bell = self._bells.get(subjects.partition_of(workspace, self._partitions))
            if bell is not None:
                bell.set()


async def ring_when(stop: asyncio.Event, bell: asyncio.Event) -> None:
    """Ring ``bell`` once ``stop`` is set (a loop waiting on its bell sees it stop)."""
    await stop.wait()
    bell.set()


async def wait(event: asyncio.Event, seconds: float) -> None:
    """Until ``event`` is set, or ``seconds`` at most."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout=seconds)
