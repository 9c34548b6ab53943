"""A long batch of events is queued in parts, the event loop free in between, and whole: a
caller cancelled while it is queued neither cuts it short nor lets its next publish overtake it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import nats
import pytest

from mnemo_runtime.bus import YIELD_EVERY, EventPublisher, ensure_stream
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event

BATCH = 4 * YIELD_EVERY


def _messages(ws: str, first: int, n: int) -> list[MessagePosted]:
    return [
        MessagePosted(
            workspace=ws,
            session_id="s",
            message_id=f"m{i}",
            peer_id="ann",
            content=f"message {i}",
            metadata={},
            created_at=datetime(2026, 3, 1, tzinfo=UTC),
            token_count=2,
        )
        for i in range(first, first + n)
    ]


async def _stored_ids(js: nats.js.JetStreamContext, ws: str, n: int) -> list[str]:
    """The message ids of ``ws`` in stream order, once ``n`` are stored (10 s at most)."""
    async with asyncio.timeout(10):
        while True:
            stored = await read_stored(js, subjects.STREAM, subjects.message_filter_of(ws))
            if len(stored) >= n:
                events = [decode_event(s.data) for s in stored]
                return [e.message_id for e in events if isinstance(e, MessagePosted)]
            await asyncio.sleep(0.05)


async def test_other_work_runs_while_a_long_batch_is_queued(own_nats: str) -> None:
    nc = await nats.connect(own_nats)
    try:
        js = nc.jetstream()
        await ensure_stream(js)
        queued = False
        ticks = 0

        async def other_requests() -> None:
            nonlocal ticks
            while not queued:
                ticks += 1
                await asyncio.sleep(0)

        other = asyncio.create_task(other_requests())
        acks = await EventPublisher(js).send(_messages("ws-a", 0, BATCH))
        queued = True
        await other
        # Once before the batch begins, and between each of its parts.
        assert ticks >= BATCH // YIELD_EVERY
        assert len(await acks) == BATCH
        assert await _stored_ids(js, "ws-a", BATCH) == [f"m{i}" for i in range(BATCH)]
    finally:
        await nc.close()


async def test_a_batch_begun_is_stored_whole_and_first_when_its_caller_is_cancelled(
    own_nats: str,
) -> None:
    nc = await nats.connect(own_nats)
    try:
        js = nc.jetstream()
        await ensure_stream(js)
        publisher = EventPublisher(js)
        caller = asyncio.create_task(publisher.publish(_messages("ws-b", 0, BATCH)))
        await asyncio.sleep(0)  # the batch has begun
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        await publisher.publish(_messages("ws-b", BATCH, 1))
        assert await _stored_ids(js, "ws-b", BATCH + 1) == [f"m{i}" for i in range(BATCH + 1)]
    finally:
        await nc.close()
