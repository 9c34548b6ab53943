"""The deriver's bus adapter: one durable per partition, read while this replica holds it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_deriver.service import DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.deadletters import DeadLetters, letter_partition, redrive_loop
from mnemo_runtime.logging import get_logger
from mnemo_runtime.partitions import Leases
from mnemo_runtime.work import PartitionFeeds, stage_consumer
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event

log = get_logger("mnemo.deriver")


def consumer(settings: DeriverSettings, partition: int) -> ConsumerConfig:
    """The durable through which the deriver reads one partition's messages."""
    return stage_consumer(
        subjects.message_filter(partition),
        subjects.stage_durable(subjects.DERIVER, partition),
        ack_wait=settings.ack_wait_s,
        max_ack_pending=settings.max_ack_pending,
    )


def consumers(settings: DeriverSettings, partitions: int) -> list[ConsumerConfig]:
    """Every durable the deriver reads, one per partition."""
    return [consumer(settings, p) for p in range(partitions)]


async def consume(
    js: JetStreamContext,
    service: DeriverService,
    stop: asyncio.Event,
    settings: DeriverSettings,
    dead: DeadLetters,
    leases: Leases,
) -> None:
    """Feed the service from the partitions ``leases`` gives this replica, until ``stop``."""
    feeds = PartitionFeeds(
        subjects.DERIVER,
        js,
        lambda p: consumer(settings, p),
        service.deliver,
        service.release,
        dead,
        settings.fetch_batch,
        room=service.held,
        started=service.resume,
        wanted=service.wanted,
    )
    leases.add(feeds)
    ticker = asyncio.create_task(_tick(service, stop))
    redrives = asyncio.create_task(
        redrive_loop(
            dead,
            lambda letter: _redrive(js, service, letter),
            stop,
            wanted=lambda letter: letter_partition(letter, leases.partitions) in feeds.partitions,
        )
    )
    try:
        await stop.wait()
    finally:
        await ticker
        await redrives
        # The leases stop each partition on the way out: what runs finishes, what waits is
        # delivered again to whoever takes the partition next.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_released(feeds), 30)


async def _released(feeds: PartitionFeeds) -> None:
    while feeds.partitions:
        await asyncio.sleep(0.05)


async def _redrive(js: JetStreamContext, service: DeriverService, letter: dict[str, Any]) -> None:
    """A dead letter's messages, read again from the log (or corrected), derived again."""
    seqs = [int(s) for s in letter["detail"].get("seqs") or [letter["stream_seq"]] if s]
    events: list[tuple[int, MessagePosted]] = []
    for seq in seqs:
        fixed = letter["fixed_data"] if len(seqs) == 1 else None
        data = bytes(fixed) if fixed is not None else (await js.get_msg(subjects.STREAM, seq)).data
        event = decode_event(data or b"")
        if not isinstance(event, MessagePosted):
            raise ValueError(f"the event at {seq} is a {event.type}, not a posted message")
        events.append((seq, event))
    if letter["observer"] is None or letter["observed"] is None:
        # An event that did not decode when delivered: derive it for every representation.
        for seq, event in events:
            for rep in event.representations:
                scoped = {
                    **letter,
                    "observer": rep.observer,
                    "observed": rep.observed,
                    "workspace": event.workspace,
                }
                await service.redrive(scoped, [(seq, event)])
        return
    await service.redrive(letter, events)


async def _tick(service: DeriverService, stop: asyncio.Event) -> None:
    while not stop.is_set():
        service.tick()
        try:
            await service.tend()
        except Exception:
            log.exception("deriver.tend_failed")
        await asyncio.sleep(0.02)
