"""python -m mnemo_gateway: the HTTP API alone."""

from __future__ import annotations

import asyncio

from mnemo_gateway.app import build_app, server
from mnemo_gateway.settings import GatewaySettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.process import main


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    settings = GatewaySettings()
    http = server(build_app(settings, infra.nc, infra.pool), settings)
    task = asyncio.create_task(http.serve())
    await stop.wait()
    http.should_exit = True
    await task


if __name__ == "__main__":
    main("gateway", _run)
