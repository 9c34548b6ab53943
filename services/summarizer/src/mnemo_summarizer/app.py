"""Composition root of the summarizer."""

from __future__ import annotations

import asyncio

from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.infra import Infra
from mnemo_runtime.logging import get_logger
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.models import ChatModel, Stage, UsageLedger
from mnemo_runtime.models.config import ModelSettings, build_model
from mnemo_runtime.partitions import Leases, held_by
from mnemo_runtime.tokens import TokenCounter
from mnemo_summarizer.adapters.bus import consume
from mnemo_summarizer.adapters.history import PgSessionHistory
from mnemo_summarizer.adapters.progress import LogProgress, hand_over
from mnemo_summarizer.local import local_reasoner
from mnemo_summarizer.service import SummarizerService
from mnemo_summarizer.settings import SummarizerSettings

log = get_logger("mnemo.summarizer")
MIGRATIONS = package_migrations("mnemo_summarizer")


def build_summarizer_model(ledger: UsageLedger | None = None) -> ChatModel:
    """The configured summarizer model; the local heuristic reasoner when no provider key is set."""
    return build_model(
        Stage.SUMMARIZER,
        ModelSettings(),
        local_factory=lambda _stage: local_reasoner(),
        ledger=ledger,
    )


async def run(
    infra: Infra,
    stop: asyncio.Event,
    leases: Leases | None = None,
    settings: SummarizerSettings | None = None,
    model: ChatModel | None = None,
) -> None:
    """Run the summarizer until ``stop``, on the partitions ``leases`` gives it (a lease
    holder of its own when none is given)."""
    settings = settings or SummarizerSettings()
    dead = DeadLetters(infra.js, infra.pool, "summarizer")
    await dead.ensure()
    events = EventPublisher(infra.js)
    handed = await hand_over(infra.pool, events)
    if handed:
        log.info("summarizer.progress_handed_over", sessions=handed)
    service = SummarizerService(
        settings,
        model or build_summarizer_model(),
        events,
        PgSessionHistory(infra.pool, infra.partitions),
        dead,
        TokenCounter().count,
        LogProgress(events, infra.nc.publish),
    )
    async with held_by(infra.database_url, infra.partitions, stop, leases) as held:
        await consume(infra.js, service, stop, settings, dead, held)
