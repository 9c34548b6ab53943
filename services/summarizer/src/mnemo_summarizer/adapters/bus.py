"""The summarizer's bus adapter: one durable per partition, read while this replica holds it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from mnemo_runtime.deadletters import DeadLetters, letter_partition, redrive_loop
from mnemo_runtime.partitions import Leases
from mnemo_runtime.work import PartitionFeeds, stage_consumer
from mnemo_schema import subjects
from mnemo_summarizer.cadence import KINDS
from mnemo_summarizer.service import SummarizerService
from mnemo_summarizer.settings import SummarizerSettings


def consumer(settings: SummarizerSettings, partition: int) -> ConsumerConfig:
    """The durable through which the summarizer reads one partition's messages."""
    return stage_consumer(
        subjects.message_filter(partition),
        subjects.stage_durable(subjects.SUMMARIZER, partition),
        ack_wait=settings.ack_wait_s,
    )


def consumers(settings: SummarizerSettings, partitions: int) -> list[ConsumerConfig]:
    """Every durable the summarizer reads, one per partition."""
    return [consumer(settings, p) for p in range(partitions)]


async def consume(
    js: JetStreamContext,
    service: SummarizerService,
    stop: asyncio.Event,
    settings: SummarizerSettings,
    dead: DeadLetters,
    leases: Leases,
) -> None:
    """Feed the service from the partitions ``leases`` gives this replica, until ``stop``."""
    feeds = PartitionFeeds(
        subjects.SUMMARIZER,
        js,
        lambda p: consumer(settings, p),
        service.deliver,
        service.release,
        dead,
        settings.fetch_batch,
    )
    leases.add(feeds)
    redrives = asyncio.create_task(
        redrive_loop(
            dead,
            lambda letter: _redrive(service, letter),
            stop,
            wanted=lambda letter: letter_partition(letter, leases.partitions) in feeds.partitions,
        )
    )
    try:
        await stop.wait()
    finally:
        await redrives
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_released(feeds), 30)


async def _released(feeds: PartitionFeeds) -> None:
    while feeds.partitions:
        await asyncio.sleep(0.05)


async def _redrive(service: SummarizerService, letter: dict[str, Any]) -> None:
    """A lost summary (or a message that could not be counted): the session summarized again."""
    if letter["workspace"] is None or letter["session_id"] is None:
        raise ValueError("the letter names no session to summarize")
    kind = letter["detail"].get("summary_type")
    await service.redrive(letter["workspace"], letter["session_id"], [kind] if kind else KINDS)
