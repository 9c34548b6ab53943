"""python -m mnemo_gateway: the HTTP API alone."""

from __future__ import annotations

import asyncio

import uvicorn

from mnemo_gateway.app import build_app
from mnemo_gateway.settings import GatewaySettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.process import main
from mnemo_runtime.settings import InfraSettings


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    settings = GatewaySettings()
    memory_settings = MemorySettings()
    # Semantic search needs the shared Qdrant server when the gateway runs alone.
    memory = (
        await open_memory(memory_settings, InfraSettings().state_dir.resolve())
        if memory_settings.qdrant_url is not None
        else None
    )
    app = build_app(settings, infra.nc, infra.pool, memory)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level="warning", access_log=False,
        lifespan="on", loop="none", http="httptools",
    )  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await stop.wait()
    server.should_exit = True
    await task
    if memory is not None:
        await memory.close()


if __name__ == "__main__":
    main("gateway", _run)
