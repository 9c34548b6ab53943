"""Opening the shared infrastructure a process needs: NATS + JetStream stream, Postgres pool."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from mnemo_runtime.bus import connect, ensure_stream
from mnemo_runtime.pg import Pool, open_pool


@dataclass
class Infra:
    nc: NATS
    js: JetStreamContext
    pool: Pool
    # The event stream's partition count (see ``mnemo_schema.subjects``).
    partitions: int
    database_url: str

    async def close(self) -> None:
        """Drain NATS and close the pool."""
        await self.pool.close()
        if self.nc.is_connected:
            await self.nc.drain()


async def open_infra(
    nats_url: str,
    database_url: str,
    name: str,
    pool_size: int = 10,
    partitions: int | None = None,
    on_connect: Callable[[int], None] | None = None,
    settings: Mapping[str, str] | None = None,
) -> Infra:
    """Connect to NATS (declaring the event stream, with ``partitions`` if it is new) and open a
    Postgres pool (``on_connect`` and ``settings``: see ``pg.open_pool``)."""
    nc = await connect(nats_url, name)
    js = nc.jetstream(timeout=10)
    try:
        found = await ensure_stream(js, partitions)
    except Exception:
        await nc.close()
        raise
    pool = await open_pool(
        database_url,
        min_size=2,
        max_size=pool_size,
        name=name,
        on_connect=on_connect,
        settings=settings,
    )
    return Infra(nc, js, pool, found, database_url)
