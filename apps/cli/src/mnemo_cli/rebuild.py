"""``mnemo rebuild``: drop the entity and message tables and rebuild them by replaying the log."""

from __future__ import annotations

import asyncio
import time

from mnemo_cli.local import _paths, running
from mnemo_projector.app import build_app
from mnemo_projector.positions import read_position
from mnemo_projector.settings import ProjectorSettings
from mnemo_projector.tables import drop_projection
from mnemo_runtime.bus import stream_last_seq
from mnemo_runtime.infra import open_infra
from mnemo_runtime.settings import InfraSettings


async def rebuild(settings: InfraSettings) -> None:
    """Reset the read models; replay here unless a running projector picks the reset up."""
    nats, pg, _ = _paths(settings.state_dir)
    infra = await open_infra(
        settings.nats() or nats.url, settings.database_url or pg.url(), "mnemo-rebuild"
    )
    try:
        projector = build_app(ProjectorSettings(), infra.nc, infra.js, infra.pool)
        await projector.setup()
        head = await stream_last_seq(infra.js)
        async with infra.pool.connection() as conn:
            await drop_projection(conn)
        started = time.monotonic()
        if not running(settings):
            applied = await projector.catch_up()
        else:
            # The running projector notices the reset as a gap and replays; wait for it.
            applied = 0
            while applied < head:
                await asyncio.sleep(0.1)
                async with infra.pool.connection() as conn:
                    applied = await read_position(conn)
        print(f"replayed {applied} of {head} events in {time.monotonic() - started:.1f}s")
    finally:
        await infra.close()
