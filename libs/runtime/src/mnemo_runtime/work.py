"""Work queues on JetStream for the pipeline stages: durable batches, delayed retry, dead letters,
and the feeds of partitioned stages (one durable per partition, worked by its lease holder)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from pydantic import ValidationError

from mnemo_runtime.deadletters import DeadLetters, Letter, undecodable
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects
from mnemo_schema.events import Event, MessagePosted, decode_event

log = get_logger("mnemo.work")

T = TypeVar("T")


async def decode_or_park(m: Msg, dead: DeadLetters) -> Event | None:
    """The event ``m`` carries, or None once an undecodable one is recorded as a dead letter.

    Anyone with access to the bus can publish on an event subject; one malformed message must
    not stop a stage for good, nor vanish without a trace.
    """
    try:
        return decode_event(m.data)
    except ValidationError as err:
        seq = int(m.metadata.sequence.stream) if m.reply else 0
        await dead.park(Letter.of_event(seq, m.subject, m.data, undecodable(err)))
        return None


def stage_consumer(
    filter_subject: str,
    durable: str,
    *,
    ack_wait: float,
    max_ack_pending: int = 20_000,
    deliver_all: bool = True,
) -> ConsumerConfig:
    """A stage's durable, explicitly acknowledged consumer: what the stage binds to, and what
    ``mnemo migrate`` creates (or updates) ahead of it."""
    return ConsumerConfig(
        durable_name=durable,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL if deliver_all else DeliverPolicy.NEW,
        ack_wait=ack_wait,
        max_ack_pending=max_ack_pending,
        max_deliver=-1,
    )


async def ensure_consumer(js: JetStreamContext, config: ConsumerConfig) -> None:
    """Create the durable ``config`` describes, or update the settings an existing one may
    change (ack wait, pending limit): where it starts reading stays as it is."""
    assert config.durable_name is not None
    try:
        info = await js.consumer_info(subjects.STREAM, config.durable_name)
    except NotFoundError:
        await js.add_consumer(subjects.STREAM, config)
        return
    kept = replace(
        config,
        deliver_policy=info.config.deliver_policy,
        opt_start_seq=info.config.opt_start_seq,
    )
    await js.add_consumer(subjects.STREAM, kept)


async def take_over(js: JetStreamContext, config: ConsumerConfig) -> int:
    """Bind a partition's durable as its new owner; the position it now reads from.

    Work a previous owner was given and never acknowledged (it died, or stopped before it was
    done) would wait for the ack deadline to pass; instead the durable is started again at its
    ack floor, so all of it is delivered again now. Work acknowledged above the floor comes
    again too, and is done again: every stage's effects are idempotent.
    """
    assert config.durable_name is not None
    try:
        info = await js.consumer_info(subjects.STREAM, config.durable_name)
    except NotFoundError:
        await js.add_consumer(subjects.STREAM, config)
        return 0
    floor = int(info.ack_floor.stream_seq or 0) if info.ack_floor else 0
    if not info.num_ack_pending and info.config.filter_subject == config.filter_subject:
        await ensure_consumer(js, config)
        return floor
    log.info(
        "work.take_over",
        durable=config.durable_name,
        ack_floor=floor,
        unacknowledged=info.num_ack_pending,
    )
    await js.delete_consumer(subjects.STREAM, config.durable_name)
    await js.add_consumer(
        subjects.STREAM,
        replace(config, deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=floor + 1),
    )
    return floor


# How long an idle stage's pull waits for a first message before asking again (a message is
# delivered as it comes whatever this is; it bounds how soon a pull lost with the bus, a
# restarted NATS, is asked again).
FIRST_WAIT_S = 2.0
# How long the pull that binds a durable waits (that one is not ended by a stop).
BIND_WAIT_S = 0.25


class DurablePull:
    """A durable, explicitly acknowledged pull consumer that outlives the bus going away.

    It binds on first use. A fetch that fails for another reason than finding nothing (NATS
    restarting, the durable deleted under it, the server not answering the bind) is logged, and
    after a pause the consumer is bound again at the next fetch: the work stays in the stream, so
    a stage reading through it resumes by itself instead of ending with the outage.
    """

    def __init__(
        self,
        js: JetStreamContext,
        config: ConsumerConfig,
        stream: str = subjects.STREAM,
        pause_s: float = 1.0,
    ) -> None:
        assert config.filter_subject is not None and config.durable_name is not None
        self._js = js
        self._config = config
        self._stream = stream
        self._pause_s = pause_s
        self._sub: JetStreamContext.PullSubscription | None = None

    async def fetch(self, n: int, timeout: float) -> list[Msg]:
        """Up to ``n`` messages, waiting up to ``timeout`` for the first; none when nothing
        came, or (after the pause) when the bus failed the fetch."""
        try:
            if self._sub is None:
                self._sub = await self._js.pull_subscribe(
                    self._config.filter_subject or "",
                    durable=self._config.durable_name,
                    stream=self._stream,
                    config=self._config,
                )
            return await self._sub.fetch(n, timeout=timeout)
        except (TimeoutError, NatsTimeout):
            return []
        except Exception as err:
            log.warning("work.fetch_failed", durable=self._config.durable_name, error=repr(err))
            await self.close()
            await asyncio.sleep(self._pause_s)  # the bus is away: try again shortly
            return []

    async def first(self, stop: asyncio.Event, timeout: float = FIRST_WAIT_S) -> list[Msg]:
        """The next message (in a list), waiting up to ``timeout`` for it; none when nothing
        came or ``stop`` was set meanwhile.

        An idle stage waits in one long pull rather than asking again several times a second
        (dozens of partitions' durables each asking is most of an idle stack's work); ``stop``
        ends the wait at once. A message the bus sends as the wait is given up stays in the
        subscription, the next fetch's first, and the bus sends none to a closed one."""
        if stop.is_set():
            return []
        if self._sub is None:
            # Not bound yet: bind and ask once, not given up halfway (a subscription made and
            # then dropped unkept would stay on the connection).
            return await self.fetch(1, min(timeout, BIND_WAIT_S))
        return await _unless_stopped(self.fetch(1, timeout), stop) or []

    async def close(self) -> None:
        """Unsubscribe (the durable stays); the next fetch binds again."""
        sub, self._sub = self._sub, None
        if sub is not None:
            # Left subscribed, the fetch inbox holds the connection's drain until its timeout.
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


class Room(Protocol):
    """How much more a stage may take: ``full`` says whether it must wait, ``room`` returns
    once it may take more."""

    @property
    def full(self) -> bool: ...

    async def room(self) -> None: ...


async def durable_batches(
    js: JetStreamContext,
    config: ConsumerConfig,
    stop: asyncio.Event,
    *,
    fetch: int = 256,
    room: Room | None = None,
    stream: str = subjects.STREAM,
) -> AsyncGenerator[list[Msg], None]:
    """Batches from a durable, explicitly acknowledged consumer, until ``stop`` (through any
    outage of the bus: see ``DurablePull``).

    Each fetch wakes on the first message and then takes what is already waiting (when the
    consumer says anything is): one large fetch would linger until its batch filled or its
    timeout passed. With ``room``, each fetch first waits for it: a stage holding as much as it
    may leaves the rest with the bus.
    """
    pull = DurablePull(js, config, stream)
    try:
        while not stop.is_set():
            if room is not None and room.full and not await _room_or_stop(room, stop):
                break
            msgs = await pull.first(stop)
            if not msgs:
                continue
            if fetch > 1 and _more_waiting(msgs[-1]):
                msgs += await pull.fetch(fetch - 1, timeout=0.002)
            yield msgs
    finally:
        await pull.close()


async def _room_or_stop(room: Room, stop: asyncio.Event) -> bool:
    """Wait for ``room``; False if ``stop`` came first."""
    await _unless_stopped(room.room(), stop)
    return not stop.is_set()


async def _unless_stopped(work: Awaitable[T], stop: asyncio.Event) -> T | None:
    """``work``'s result, or None once ``stop`` is set first (``work`` is then cancelled,
    unless it finished meanwhile: its result is returned, nothing it took is dropped)."""
    task = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not task.done():
            task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        if not stop.is_set():
            raise  # the wait itself was cancelled
        return None


def _more_waiting(m: Msg) -> bool:
    """Whether the consumer had more messages for us when ``m`` was delivered (the second
    fetch, a round trip, is left out when it had none)."""
    try:
        return int(m.metadata.num_pending or 0) > 0
    except Exception:  # not a JetStream delivery: ask
        return True


@dataclass(frozen=True)
class Delivery:
    """One delivered message and how to settle it with the bus."""

    seq: int
    event: MessagePosted
    ack: Callable[[], Awaitable[None]]
    nak: Callable[[float], Awaitable[None]]
    # How many times the bus has delivered it, this time included.
    attempts: int = 1


# Whether a stage wants a message, by its subject and position (False: it is acknowledged
# without being decoded).
Wanted = Callable[[str, int], bool]


async def message_deliveries(
    js: JetStreamContext,
    config: ConsumerConfig,
    stop: asyncio.Event,
    *,
    fetch: int = 256,
    dead: DeadLetters,
    room: Room | None = None,
    wanted: Wanted | None = None,
) -> AsyncIterator[list[Delivery]]:
    """Batches of MessagePosted deliveries for a stage's durable consumer, until ``stop``.

    Other events on message subjects concern no such stage and are acknowledged at once;
    undecodable ones are parked in ``dead`` and acknowledged. ``wanted`` (subject, position)
    may say before decoding that the stage does not want a message: it is acknowledged unread.
    """
    async for msgs in durable_batches(js, config, stop, fetch=fetch, room=room):
        deliveries = []
        for m in msgs:
            if wanted is not None and not wanted(m.subject, int(m.metadata.sequence.stream)):
                await m.ack()
                continue
            event = await decode_or_park(m, dead)
            if not isinstance(event, MessagePosted):
                await m.ack()
                continue
            seq = int(m.metadata.sequence.stream)
            attempts = int(m.metadata.num_delivered or 1)
            deliveries.append(Delivery(seq, event, m.ack, nak_later(m), attempts))
        yield deliveries


def nak_later(m: Msg) -> Callable[[float], Awaitable[None]]:
    """A callable that hands ``m`` back for redelivery after a delay (seconds)."""

    async def nak(delay: float) -> None:
        await m.nak(delay=delay)

    return nak


Handler = Callable[[int, list[Delivery]], Awaitable[None]]
# Called with a partition taken and the position its durable delivers again after.
Started = Callable[[int, int], Awaitable[None]]


class PartitionFeeds:
    """A stage fed by one durable per partition: the partitions its leases give it
    (``mnemo_runtime.partitions``), each read in order by a task of its own."""

    def __init__(
        self,
        group: str,
        js: JetStreamContext,
        config: Callable[[int], ConsumerConfig],
        handle: Handler,
        released: Callable[[int], Awaitable[None]],
        dead: DeadLetters,
        fetch: int = 256,
        room: Room | None = None,
        started: Started | None = None,
        wanted: Wanted | None = None,
    ) -> None:
        self.group = group
        self._wanted = wanted
        self._room = room
        self._started = started
        self._js = js
        self._config = config
        self._handle = handle
        self._released = released
        self._dead = dead
        self._fetch = fetch
        self._feeds: dict[int, tuple[asyncio.Event, asyncio.Task[None]]] = {}

    @property
    def partitions(self) -> frozenset[int]:
        """The partitions this process is reading now."""
        return frozenset(self._feeds)

    async def start(self, partition: int) -> None:
        config = self._config(partition)
        floor = await take_over(self._js, config)
        if self._started is not None:
            await self._started(partition, floor)
        stop = asyncio.Event()
        task = asyncio.create_task(self._feed(partition, config, stop))
        self._feeds[partition] = (stop, task)

    async def stop(self, partition: int) -> None:
        stop, task = self._feeds.pop(partition)
        stop.set()
        with contextlib.suppress(Exception):
            await task
        await self._released(partition)

    async def _feed(self, partition: int, config: ConsumerConfig, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async for deliveries in message_deliveries(
                    self._js,
                    config,
                    stop,
                    fetch=self._fetch,
                    dead=self._dead,
                    room=self._room,
                    wanted=self._wanted,
                ):
                    await self._handle(partition, deliveries)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                # The bus away, or the durable gone under us: bind again shortly.
                log.warning("work.feed_failed", durable=config.durable_name, error=repr(err))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)
