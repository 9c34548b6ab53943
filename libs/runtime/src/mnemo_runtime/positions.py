"""Where each projection stands in each partition of the log: the rows of ``projection_positions``.

A projection applies one partition's events in log order and records, in the same transaction,
the position of the last one it applied (``mnemo_projector``). ``seq >= s`` for the partition of
an event at ``s`` means that event and every earlier one of the partition are applied. Readers
that must see an effect (a write's response, the queue status, a stage reading what another
wrote) ask here.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

# The projections, by the name of their position rows.
ENTITIES: Final = "pg"
MEMORY: Final = "memory"
PASSAGES: Final = "passages"


async def applied(conn: AsyncConnection[Any], name: str, partition: int) -> int:
    """The last position ``name`` applied in ``partition`` (0 before any)."""
    cur = await conn.execute(
        "SELECT seq FROM projection_positions WHERE name = %s AND partition = %s",
        (name, partition),
    )
    row = await cur.fetchone()
    if row is None:
        return 0
    return int(row["seq"] if isinstance(row, dict) else row[0])


async def wait_applied(
    pool: AsyncConnectionPool, name: str, partition: int, seq: int, timeout: float
) -> bool:
    """Whether ``name`` applies position ``seq`` of ``partition`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        async with pool.connection() as conn:
            if await applied(conn, name, partition) >= seq:
                return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
