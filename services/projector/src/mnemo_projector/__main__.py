"""python -m mnemo_projector: the projections alone (MNEMO_PROJECTOR_ENTITIES / _MEMORY pick)."""

from __future__ import annotations

import asyncio

from mnemo_projector.app import projection_groups
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.partitions import Leases
from mnemo_runtime.process import main
from mnemo_runtime.settings import InfraSettings


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    settings = ProjectorSettings()
    ms = MemorySettings()
    memory = None
    if settings.memory or settings.passages:
        memory = await open_memory(ms, InfraSettings().state_dir.resolve(), infra.pool)
    leases = Leases(infra.database_url, infra.partitions)
    try:
        await projection_groups(settings, infra, memory, leases, ms.near_duplicate_distance)
        await leases.run(stop)
    finally:
        if memory is not None:
            await memory.close()


if __name__ == "__main__":
    main("projector", _run)
