"""Composition root of the summarizer."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.models import ChatModel, Stage, UsageLedger
from mnemo_runtime.models.config import ModelSettings, build_model
from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.tokens import TokenCounter
from mnemo_summarizer.adapters.bus import consume
from mnemo_summarizer.adapters.history import PgSessionHistory
from mnemo_summarizer.service import SummarizerService
from mnemo_summarizer.settings import SummarizerSettings


def build_summarizer_model(ledger: UsageLedger | None = None) -> ChatModel:
    """The configured summarizer model; the local heuristic reasoner when no provider key is set."""
    return build_model(
        Stage.SUMMARIZER,
        ModelSettings(),
        local_factory=lambda _stage: LocalReasoner(),
        ledger=ledger,
    )


async def run(
    nc: NATS,  # noqa: ARG001  (the shape every query-side stage is run with)
    js: JetStreamContext,
    pool: AsyncConnectionPool,
    memory: MemoryAdapters | None,  # noqa: ARG001
    stop: asyncio.Event,
    settings: SummarizerSettings | None = None,
    model: ChatModel | None = None,
) -> None:
    """Run the summarizer until ``stop``."""
    settings = settings or SummarizerSettings()
    dead = DeadLetters(js, pool, "summarizer")
    await dead.ensure()
    service = SummarizerService(
        settings,
        model or build_summarizer_model(),
        EventPublisher(js),
        PgSessionHistory(pool),
        dead,
        TokenCounter().count,
    )
    await consume(js, service, stop, settings.fetch_batch, settings.ack_wait_s, dead)
