"""Composition root of the projector: the entity read models and, with memory adapters, memory."""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_projector.entities import EntityProjection
from mnemo_projector.memory import IndexUpkeep, MemoryProjection
from mnemo_projector.passages import PassageProjection
from mnemo_projector.runner import Projector
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.memory.store import RepresentationStore
from mnemo_runtime.memory.wiring import MemoryAdapters


def build_app(
    settings: ProjectorSettings, nc: NATS, js: JetStreamContext, pool: AsyncConnectionPool
) -> Projector:
    """The Postgres entity projector."""
    return Projector(EntityProjection(), nc, js, pool, batch_size=settings.batch_size)


def build_memory(
    settings: ProjectorSettings,
    nc: NATS,
    js: JetStreamContext,
    pool: AsyncConnectionPool,
    memory: MemoryAdapters,
    near_distance: float = 0.05,
) -> Projector:
    """The memory projector (observations into Postgres and the vector index)."""
    projection = MemoryProjection(
        memory.embedder, memory.index, RepresentationStore(pool), near_distance=near_distance,
        upkeep=IndexUpkeep(settings.optimize_after_points, settings.optimize_quiet_s),
    )  # fmt: skip
    return Projector(projection, nc, js, pool, batch_size=settings.memory_batch_size)


def build_passages(
    settings: ProjectorSettings,
    nc: NATS,
    js: JetStreamContext,
    pool: AsyncConnectionPool,
    memory: MemoryAdapters,
) -> Projector:
    """The passage projector (messages cut, embedded and indexed for retrieval)."""
    projection = PassageProjection(memory.embedder)
    return Projector(projection, nc, js, pool, batch_size=settings.passage_batch_size)
