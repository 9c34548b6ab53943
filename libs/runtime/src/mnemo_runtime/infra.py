"""Opening the shared infrastructure a process needs: NATS + JetStream stream, Postgres pool."""

from __future__ import annotations

from dataclasses import dataclass

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_runtime.bus import connect, ensure_stream
from mnemo_runtime.pg import open_pool


@dataclass
class Infra:
    nc: NATS
    js: JetStreamContext
    pool: AsyncConnectionPool

    async def close(self) -> None:
        """Drain NATS and close the pool."""
        await self.pool.close()
        if self.nc.is_connected:
            await self.nc.drain()


async def open_infra(nats_url: str, database_url: str, name: str, pool_size: int = 10) -> Infra:
    """Connect to NATS (declaring the event stream) and open a Postgres pool."""
    nc = await connect(nats_url, name)
    js = nc.jetstream(timeout=10)
    await ensure_stream(js)
    pool = await open_pool(database_url, min_size=2, max_size=pool_size)
    return Infra(nc, js, pool)
