"""A stage's batches from its durable: what waits comes in one batch, a lone message at once;
an idle pull waits long and ends with the stage."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from nats.js.api import StreamConfig
from nats.js.errors import NotFoundError

from mnemo_runtime.bus import connect
from mnemo_runtime.work import DurablePull, durable_batches, stage_consumer
from mnemo_schema import subjects


async def test_waiting_messages_come_in_one_batch_and_a_lone_one_alone(own_nats: str):
    nc = await connect(own_nats, "test-batches")
    js = nc.jetstream(timeout=5)
    stop = asyncio.Event()
    try:
        await js.add_stream(StreamConfig(name=subjects.STREAM, subjects=["batches.>"]))
        for i in range(5):
            await js.publish("batches.a", f"waiting {i}".encode())
        batches = durable_batches(
            js, stage_consumer("batches.>", "stage", ack_wait=30), stop, fetch=256
        )
        # The first fetch takes one; the consumer says more wait, and the second takes them.
        # The second waits 2 ms at most (a batch with nothing behind it costs nothing more): on
        # a busy host what it asked for may arrive after it gave up, and the next batch takes
        # it from the subscription, whole. Nothing is left for the bus to deliver again.
        got: list[list[bytes]] = []
        while sum(map(len, got)) < 5:
            batch = await asyncio.wait_for(batches.__anext__(), timeout=10)
            got.append([m.data for m in batch])
            for m in batch:
                await m.ack()
        assert [d for b in got for d in b] == [f"waiting {i}".encode() for i in range(5)]
        assert len(got) <= 2, got
        assert got[-1] == [f"waiting {i}".encode() for i in range(5 - len(got[-1]), 5)]
        await js.publish("batches.a", b"alone")
        (alone,) = await asyncio.wait_for(batches.__anext__(), timeout=10)
        assert alone.data == b"alone" and alone.metadata.num_pending == 0
        await alone.ack()
        stop.set()
        await batches.aclose()
    finally:
        await nc.close()


async def test_batches_wait_for_room_and_stop_while_waiting(own_nats: str):
    nc = await connect(own_nats, "test-batches-room")
    js = nc.jetstream(timeout=5)
    stop = asyncio.Event()
    room = asyncio.Event()

    class Gate:
        """Room while ``room`` is set."""

        @property
        def full(self) -> bool:
            return not room.is_set()

        async def room(self) -> None:
            await room.wait()

    try:
        await js.add_stream(StreamConfig(name=subjects.STREAM, subjects=["room.>"]))
        await js.publish("room.a", b"first")
        batches = durable_batches(
            js, stage_consumer("room.>", "stage", ack_wait=30), stop, fetch=256, room=Gate()
        )
        waiting = asyncio.ensure_future(batches.__anext__())
        await asyncio.sleep(0.5)
        assert not waiting.done()  # no room: nothing fetched
        with contextlib.suppress(NotFoundError):  # not even bound yet
            info = await js.consumer_info(subjects.STREAM, "stage")
            assert info.delivered.stream_seq == 0
        room.set()
        (first,) = await asyncio.wait_for(waiting, timeout=10)
        assert first.data == b"first"
        await first.ack()
        room.clear()
        waiting = asyncio.ensure_future(batches.__anext__())
        await asyncio.sleep(0.1)
        stop.set()  # stopping while waiting for room ends the batches
        try:
            await asyncio.wait_for(waiting, timeout=5)
            raise AssertionError("a batch came without room")
        except StopAsyncIteration:
            pass
    finally:
        await nc.close()


async def test_an_idle_pull_ends_with_stop_and_what_comes_after_is_not_held(own_nats: str):
    """An idle stage waits in one long pull: a message is delivered as it comes, ``stop`` ends
    the wait at once, and a message published after a wait was given up comes with the next
    fetch, on the same subscription or after it was closed (not after the ack wait, as one
    delivered to nobody would)."""
    nc = await connect(own_nats, "test-batches-idle")
    js = nc.jetstream(timeout=5)
    config = stage_consumer("idle.>", "stage", ack_wait=120)
    try:
        await js.add_stream(StreamConfig(name=subjects.STREAM, subjects=["idle.>"]))

        async def pulled(pull: DurablePull, stop: asyncio.Event) -> list[bytes]:
            # Waits of a minute, each expected to end within ten seconds.
            msgs = await asyncio.wait_for(pull.first(stop, timeout=60), timeout=10)
            for m in msgs:
                await m.ack()
            return [m.data for m in msgs]

        async def waiting_pulls() -> int:
            try:
                info = await js.consumer_info(subjects.STREAM, "stage")
            except NotFoundError:  # not bound yet
                return 0
            return int(info.num_waiting or 0)

        pull = DurablePull(js, config)
        stop = asyncio.Event()
        assert await pulled(pull, stop) == []  # binds the durable: a short pull
        first = asyncio.ensure_future(pulled(pull, stop))
        await _until(lambda: waiting_pulls(), 1)
        await js.publish("idle.a", b"while waiting")
        assert await first == [b"while waiting"]

        # Stopped while waiting: nothing, at once; what comes next goes to the next fetch.
        idle = asyncio.ensure_future(pulled(pull, stop))
        await _until(lambda: waiting_pulls(), 1)
        stop.set()
        assert await idle == []
        await js.publish("idle.a", b"after a stop")
        assert await pulled(pull, asyncio.Event()) == [b"after a stop"]

        # Stopped and closed, as a stage ends: the next binding gets what came meanwhile.
        stop = asyncio.Event()
        idle = asyncio.ensure_future(pulled(pull, stop))
        await _until(lambda: waiting_pulls(), 1)
        stop.set()
        assert await idle == []
        await pull.close()
        await js.publish("idle.a", b"after a close")
        again = DurablePull(js, config)  # its binding pull finds it waiting
        assert await pulled(again, asyncio.Event()) == [b"after a close"]
        await again.close()
    finally:
        await nc.close()


async def _until(count: Callable[[], Awaitable[int]], at_least: int) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while await count() < at_least:
        assert asyncio.get_running_loop().time() < deadline, "the pull did not wait"
        await asyncio.sleep(0.01)
