"""``queue.empty``'s checks under a stream of announcements: paced to a share of the time, so a
backlog's announcements do not run queue statuses back to back (real NATS)."""

from __future__ import annotations

import asyncio
import time

import nats

from mnemo_gateway.webhooks.drain import DrainNotifier, DrainWatch
from mnemo_schema import subjects

CHECK_S = 0.05


class _SlowQueue:
    """A queue status that takes as long as a large workspace's does, and is never empty."""

    def __init__(self) -> None:
        self.checks = 0

    async def listened(self, workspace: str) -> bool:
        return True

    async def outstanding(self, workspace: str) -> dict[str, tuple[int, int]]:
        self.checks += 1
        await asyncio.sleep(CHECK_S)
        return {"s": (10, 5)}


async def test_checks_take_at_most_their_share_of_the_time(own_nats):
    nc = await nats.connect(own_nats)
    queue = _SlowQueue()
    watch = DrainWatch(queue)
    watch.touched("w", ["s"])
    stop = asyncio.Event()

    async def nothing(_: object) -> None:
        return None

    task = asyncio.create_task(DrainNotifier(nc, watch, nothing, busy_share=0.2).run(stop))
    try:
        began = time.monotonic()
        while time.monotonic() - began < 2.0:  # a projection announcing batch after batch
            await nc.publish(subjects.MEMORY_PROJECTION_APPLIED, b"0:1")
            await asyncio.sleep(0.002)
        took = time.monotonic() - began
        # Back to back, about took / CHECK_S checks; at a fifth of the time, a fifth of that.
        assert 1 <= queue.checks <= 0.2 * took / CHECK_S + 2
    finally:
        stop.set()
        await task
        await nc.close()
