"""python -m mnemo_gateway: the HTTP API alone."""

from __future__ import annotations

import asyncio

import uvicorn

from mnemo_gateway.app import build_app
from mnemo_gateway.settings import GatewaySettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.process import main


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    settings = GatewaySettings()
    app = build_app(settings, infra.nc, infra.pool)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop="none",
        http="httptools",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await stop.wait()
    server.should_exit = True
    await task


if __name__ == "__main__":
    main("gateway", _run)
