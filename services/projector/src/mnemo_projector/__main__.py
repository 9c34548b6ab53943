"""python -m mnemo_projector: the Postgres projector alone."""

from __future__ import annotations

import asyncio

from mnemo_projector.app import build_app
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.process import main


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    projector = build_app(ProjectorSettings(), infra.nc, infra.js, infra.pool)
    await projector.setup()
    await projector.run(stop)


if __name__ == "__main__":
    main("projector", _run)
