"""python -m mnemo_ingest: command handling alone."""

from __future__ import annotations

import asyncio

from mnemo_ingest.app import build_app, build_broker
from mnemo_ingest.settings import IngestSettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.process import main
from mnemo_runtime.settings import InfraSettings


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    url, _ = InfraSettings().require_urls()
    broker = build_broker(url)
    broker.include_router(build_app(IngestSettings(), infra.js, infra.pool))
    await broker.start()
    try:
        await stop.wait()
    finally:
        await broker.stop()


if __name__ == "__main__":
    main("ingest", _run)
