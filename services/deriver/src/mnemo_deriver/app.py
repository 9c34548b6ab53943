"""Composition root of the deriver."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_deriver.adapters.bus import consume
from mnemo_deriver.adapters.progress import Announce, PgProgress
from mnemo_deriver.service import DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.memory.store import RepresentationStore
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.models import ChatModel, Stage, UsageLedger
from mnemo_runtime.models.config import ModelSettings, build_model
from mnemo_runtime.models.local import LocalReasoner

MIGRATIONS = package_migrations("mnemo_deriver")


def build_deriver_model(ledger: UsageLedger | None = None) -> ChatModel:
    """The configured deriver model; the local heuristic reasoner when no provider key is set."""
    return build_model(
        Stage.DERIVER, ModelSettings(), local_factory=lambda _stage: LocalReasoner(), ledger=ledger
    )


async def run(
    settings: DeriverSettings,
    js: JetStreamContext,
    pool: AsyncConnectionPool,
    stop: asyncio.Event,
    model: ChatModel | None = None,
    announce: Announce | None = None,
) -> None:
    """Run the deriver until ``stop``; ``announce`` publishes its progress notes (core NATS)."""
    dead = DeadLetters(js, pool, "deriver")
    await dead.ensure()
    service = DeriverService(
        settings,
        model or build_deriver_model(),
        EventPublisher(js),
        RepresentationStore(pool),
        dead,
        PgProgress(pool, announce),
    )
    await consume(js, service, stop, settings.fetch_batch, settings.ack_wait_s, dead)
