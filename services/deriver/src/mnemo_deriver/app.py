"""Composition root of the deriver."""

from __future__ import annotations

import asyncio

from mnemo_deriver.adapters.bus import consume
from mnemo_deriver.adapters.gaps import PgGapRecords
from mnemo_deriver.adapters.progress import LogProgress, hand_over
from mnemo_deriver.adapters.reread import LogReread
from mnemo_deriver.adapters.turns import LogTurns
from mnemo_deriver.local import local_deriver
from mnemo_deriver.rereads import Rereads
from mnemo_deriver.service import DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.infra import Infra
from mnemo_runtime.logging import get_logger
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.models import ChatModel, Stage, UsageLedger
from mnemo_runtime.models.config import ModelSettings, build_model
from mnemo_runtime.partitions import Leases, held_by

log = get_logger("mnemo.deriver")
MIGRATIONS = package_migrations("mnemo_deriver")


def build_deriver_model(ledger: UsageLedger | None = None) -> ChatModel:
    """The configured deriver model; the local heuristic reasoner when no provider key is set."""
    return build_model(Stage.DERIVER, ModelSettings(), local_factory=local_deriver, ledger=ledger)


async def run(
    settings: DeriverSettings,
    infra: Infra,
    stop: asyncio.Event,
    leases: Leases | None = None,
    model: ChatModel | None = None,
) -> None:
    """Run the deriver until ``stop``, on the partitions ``leases`` gives it (a lease holder
    of its own when none is given); its progress notes go out on core NATS."""
    dead = DeadLetters(infra.js, infra.pool, "deriver")
    await dead.ensure()
    events = EventPublisher(infra.js)
    handed = await hand_over(infra.pool, events)
    if handed:
        log.info("deriver.progress_handed_over", lines=handed)
    service = DeriverService(
        settings,
        model or build_deriver_model(),
        events,
        dead,
        LogProgress(events, infra.nc.publish),
        LogTurns(infra.nc),
        rereads=Rereads(
            settings.share, PgGapRecords(infra.pool), reread := LogReread(infra.nc, infra.js)
        ),
    )
    try:
        async with held_by(infra.database_url, infra.partitions, stop, leases) as held:
            await consume(infra.js, service, stop, settings, dead, held)
    finally:
        await reread.close()
