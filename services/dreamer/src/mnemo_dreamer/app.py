"""Composition root of the dreamer."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from mnemo_dreamer.adapters.bus import consume_dreams, consume_observations, redrive, tick
from mnemo_dreamer.adapters.memory import PgMemory
from mnemo_dreamer.adapters.schedule import PgSchedule
from mnemo_dreamer.local_deduction import LocalDeduction
from mnemo_dreamer.local_induction import LocalInduction
from mnemo_dreamer.service import Dreamer
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.bus import EventPublisher, ensure_stream
from mnemo_runtime.deadletters import DeadLetters, redrive_loop
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.models import ChatModel, Stage, UsageLedger
from mnemo_runtime.models.config import ModelSettings, build_model
from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.pg import Pool
from mnemo_runtime.retrieval import LocalEngine, RetrievalClient

MIGRATIONS = package_migrations("mnemo_dreamer")

STAGES = (Stage.DREAMER_DEDUCTION, Stage.DREAMER_INDUCTION)


def local_dreamer(stage: Stage) -> ChatModel:  # noqa: ARG001  (the factory shape takes a stage)
    """The local reasoner with this service's deduction and induction skills."""
    return LocalReasoner(
        {Stage.DREAMER_DEDUCTION: LocalDeduction(), Stage.DREAMER_INDUCTION: LocalInduction()}
    )


def build_dreamer_models(ledger: UsageLedger | None = None) -> dict[Stage, ChatModel]:
    """The configured specialist models; the local heuristic reasoner without a provider key."""
    return {
        s: build_model(s, ModelSettings(), local_factory=local_dreamer, ledger=ledger)
        for s in STAGES
    }


async def run(
    nc: NATS,
    js: JetStreamContext,
    pool: Pool,
    memory: MemoryAdapters | None,  # noqa: ARG001 - similarity goes to the retrieval engine
    stop: asyncio.Event,
    engine: LocalEngine | None = None,
    partitions: int | None = None,
) -> None:
    """Run the dreamer until ``stop``; ``engine``: the context service, when it runs in this
    process.

    The dreamer is not partitioned: replicas share its durables, and a dream holds its
    representation's lock. ``partitions``: the stream's (read from it when not given).
    """
    settings = DreamerSettings()
    partitions = partitions or await ensure_stream(js)
    dreamer = Dreamer(
        settings,
        build_dreamer_models(),
        PgMemory(pool, RetrievalClient(nc, engine), partitions),
        EventPublisher(js),
        PgSchedule(pool, settings),
        announce=nc.publish,
    )
    dead = DeadLetters(js, pool, "dreamer")
    await dead.ensure()
    await asyncio.gather(
        consume_observations(js, dreamer, stop, dead),
        consume_dreams(js, dreamer, stop, dead),
        tick(dreamer, stop),
        redrive_loop(dead, lambda letter: redrive(js, letter), stop),
    )
