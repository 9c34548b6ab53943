"""python -m mnemo_projector: the projections alone (MNEMO_PROJECTOR_ENTITIES / _MEMORY pick)."""

from __future__ import annotations

import asyncio

from mnemo_projector.app import build_app, build_memory, build_passages
from mnemo_projector.eraser import Eraser
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.process import main
from mnemo_runtime.settings import InfraSettings


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    settings = ProjectorSettings()
    projector = build_app(settings, infra.nc, infra.js, infra.pool)
    # The entity tables are created either way: the memory projection reads messages.
    await projector.setup()
    # The eraser goes with the entity projection: one of them per deployment.
    runs = [projector.run(stop), Eraser(infra.nc, infra.js, infra.pool).run(stop)]
    if not settings.entities:
        runs = []
    memory = None
    if settings.memory or settings.passages:
        ms = MemorySettings()
        memory = await open_memory(ms, InfraSettings().state_dir.resolve(), infra.pool)
    if memory is not None and settings.memory:
        mp = build_memory(
            settings, infra.nc, infra.js, infra.pool, memory,
            near_distance=ms.near_duplicate_distance,
        )  # fmt: skip
        await mp.setup()
        runs.append(mp.run(stop))
    if memory is not None and settings.passages:
        pp = build_passages(settings, infra.nc, infra.js, infra.pool, memory)
        await pp.setup()
        runs.append(pp.run(stop))
    try:
        await asyncio.gather(*runs)
    finally:
        if memory is not None:
            await memory.close()


if __name__ == "__main__":
    main("projector", _run)
