"""Composition root of the projector: the entity read models and, with memory adapters, memory.

Each projection is a group of per-partition projectors (``partitioned.ProjectionGroup``), which
the process's leases start and stop; the eraser, beside the entity projection, likewise.
"""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from mnemo_projector.doorbell import Doorbell
from mnemo_projector.entities import EntityProjection
from mnemo_projector.eraser import FOLLOWED_KINDS, Eraser
from mnemo_projector.memory import MemoryProjection
from mnemo_projector.memory_vectors import IndexUpkeep
from mnemo_projector.partitioned import EraserGroup, ProjectionGroup
from mnemo_projector.passages import PassageProjection
from mnemo_projector.positions import Projection
from mnemo_projector.runner import Projector
from mnemo_projector.sender_graphs import SenderGraphs
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.partitions import Leases
from mnemo_runtime.pg import Pool


def _group(
    projection: Projection,
    settings: ProjectorSettings,
    batch_size: int,
    nc: NATS,
    js: JetStreamContext,
    pool: Pool,
    partitions: int,
) -> ProjectionGroup:
    """Each partition's projector of ``projection``: batches of ``batch_size``, and the turns
    (of a projection taking workspaces in turns) and held events ``settings`` says."""
    return ProjectionGroup(
        projection,
        pool,
        lambda p: Projector(
            projection,
            nc,
            js,
            pool,
            batch_size,
            partition=p,
            partitions=partitions,
            turn_s=settings.turn_s,
            max_held=settings.held_events,
        ),
        partitions,
    )


def build_app(
    settings: ProjectorSettings,
    nc: NATS,
    js: JetStreamContext,
    pool: Pool,
    partitions: int,
) -> ProjectionGroup:
    """The Postgres entity projection."""
    return _group(EntityProjection(), settings, settings.batch_size, nc, js, pool, partitions)


def build_memory(
    settings: ProjectorSettings,
    nc: NATS,
    js: JetStreamContext,
    pool: Pool,
    memory: MemoryAdapters,
    partitions: int,
    near_distance: float = 0.05,
) -> ProjectionGroup:
    """The memory projection (observations into Postgres and the vector index)."""
    projection = MemoryProjection(
        memory.embedder,
        memory.index,
        nc,
        near_distance=near_distance,
        upkeep=IndexUpkeep(settings.optimize_after_points, settings.optimize_quiet_s),
    )
    return _group(projection, settings, settings.memory_batch_size, nc, js, pool, partitions)


def build_passages(
    settings: ProjectorSettings,
    nc: NATS,
    js: JetStreamContext,
    pool: Pool,
    memory: MemoryAdapters,
    partitions: int,
) -> ProjectionGroup:
    """The passage projection (messages cut, embedded and indexed for retrieval)."""
    graphs = SenderGraphs(pool, settings.sender_graph_passages)
    projection = PassageProjection(memory.embedder, graphs)
    return _group(projection, settings, settings.passage_batch_size, nc, js, pool, partitions)


def build_eraser(nc: NATS, js: JetStreamContext, pool: Pool, partitions: int) -> EraserGroup:
    """The eraser of every partition, under the leases, rung by one doorbell."""
    doorbell = Doorbell(nc, partitions, FOLLOWED_KINDS)
    return EraserGroup(lambda p: Eraser(nc, js, pool, partition=p, doorbell=doorbell), partitions)


async def projection_groups(
    settings: ProjectorSettings,
    infra: Infra,
    memory: MemoryAdapters | None,
    leases: Leases,
    near_distance: float = 0.05,
) -> list[ProjectionGroup]:
    """The projections this process keeps (``settings``), set up and handed to ``leases``,
    which start each partition's projector as this process takes it; the eraser goes with the
    entity projection."""
    args = (infra.nc, infra.js, infra.pool)
    groups = []
    if settings.entities:
        groups.append(build_app(settings, *args, infra.partitions))
        eraser = build_eraser(*args, infra.partitions)
        await eraser.setup()
        leases.add(eraser)
    if settings.memory and memory is not None:
        groups.append(
            build_memory(settings, *args, memory, infra.partitions, near_distance=near_distance)
        )
    if settings.passages and memory is not None:
        groups.append(build_passages(settings, *args, memory, infra.partitions))
    for group in groups:
        await group.setup()
        leases.add(group)
    return groups
