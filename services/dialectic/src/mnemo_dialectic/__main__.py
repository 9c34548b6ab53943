"""python -m mnemo_dialectic: the dialectic alone (similarity search needs QDRANT_URL)."""

from __future__ import annotations

import asyncio

from mnemo_dialectic.app import run
from mnemo_runtime.infra import Infra
from mnemo_runtime.memory.wiring import MemoryAdapters, MemorySettings, open_memory
from mnemo_runtime.process import main
from mnemo_runtime.settings import InfraSettings


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    settings = MemorySettings()
    # The embedded index belongs to the process that writes it; alone, search by text rank.
    memory: MemoryAdapters | None = None
    if settings.qdrant_url is not None:
        memory = await open_memory(settings, InfraSettings().state_dir.resolve())
    try:
        await run(infra.nc, infra.js, infra.pool, memory, stop)
    finally:
        if memory is not None:
            await memory.close()


if __name__ == "__main__":
    main("dialectic", _run)
