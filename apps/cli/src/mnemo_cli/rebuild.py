"""``mnemo rebuild``: drop a projection's tables and rebuild them by replaying the log.

Without options: the entity and message tables. ``--memory``: what memory formation projects
(observations with their provenance and vectors, peer cards, summaries, dreams, message
passages and their word postings); the memory projection's output depends on the log alone,
so the replay reaches the same state. A running stack's projectors notice the reset and replay;
without one, the replay runs here.
"""

from __future__ import annotations

import asyncio
import time

from mnemo_cli.local import _paths, running
from mnemo_projector.app import build_app, build_memory, build_passages
from mnemo_projector.partitioned import ProjectionGroup
from mnemo_projector.settings import ProjectorSettings
from mnemo_projector.tables import drop_memory, drop_projection
from mnemo_runtime.bus import stream_last_seq
from mnemo_runtime.infra import Infra, open_infra
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.settings import InfraSettings


async def rebuild(settings: InfraSettings, memory: bool = False) -> None:
    """Reset the read models; replay here unless a running projector picks the reset up."""
    nats, pg, _ = _paths(settings.state_dir)
    infra = await open_infra(
        settings.nats() or nats.url,
        settings.database_url or pg.url(),
        "mnemo-rebuild",
        partitions=settings.partitions,
    )
    ps = ProjectorSettings()
    adapters = None
    try:
        args = (ps, infra.nc, infra.js, infra.pool)
        if memory:
            ms = MemorySettings()
            adapters = await open_memory(ms, settings.state_dir.resolve(), infra.pool)
            groups = [
                build_memory(*args, adapters, infra.partitions, ms.near_duplicate_distance),
                build_passages(*args, adapters, infra.partitions),
            ]
        else:
            groups = [build_app(*args, infra.partitions)]
        for group in groups:
            await group.setup()
        head = await stream_last_seq(infra.js)
        async with infra.pool.connection() as conn:
            if memory:
                assert adapters is not None
                await drop_memory(conn, adapters.index)
            else:
                await drop_projection(conn)
        started = time.monotonic()
        if running(settings):
            # The running projectors notice the reset and replay; wait for them.
            applied = sum([await g.pending_everywhere(infra.partitions) for g in groups])
            await _caught_up(infra, groups)
        else:
            applied = sum([await g.catch_up(infra.partitions) for g in groups])
        what = "memory" if memory else "entity and message"
        print(
            f"replayed the {what} projections: {applied} events of the {head} in the log,"
            f" in {time.monotonic() - started:.1f}s"
        )
    finally:
        if adapters is not None:
            await adapters.close()
        await infra.close()


async def _caught_up(infra: Infra, groups: list[ProjectionGroup]) -> None:
    """Until no partition of ``groups`` has events left to apply."""
    while sum([await g.pending_everywhere(infra.partitions) for g in groups]) > 0:
        await asyncio.sleep(0.2)
