"""Where each projection stands in each partition of the log: the rows of ``projection_positions``.

A projection applies one partition's events in log order and records, in the same transaction,
the position of the last one it applied (``mnemo_projector``). ``seq >= s`` for the partition of
an event at ``s`` means that event and every earlier one of the partition are applied. A
projection that takes a partition's workspaces in turns also records, in ``projection_ahead``,
how far a workspace applied past that position is: its events up to there are applied. Readers
that must see an effect (a write's response, the queue status, a stage reading what another
wrote) ask here.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from mnemo_runtime.pg import Connection, Pool

# The projections, by the name of their position rows.
ENTITIES: Final = "pg"
MEMORY: Final = "memory"
PASSAGES: Final = "passages"


async def applied(conn: Connection, name: str, partition: int, workspace: str | None = None) -> int:
    """The last position ``name`` applied in ``partition`` (0 before any); with ``workspace``,
    the last of that workspace's events it applied, which may be further."""
    cur = await conn.execute(
        "SELECT GREATEST(p.seq, COALESCE((SELECT a.seq FROM projection_ahead a"
        " WHERE a.name = p.name AND a.partition = p.partition AND a.workspace = %s), 0)) AS seq"
        " FROM projection_positions p WHERE p.name = %s AND p.partition = %s",
        (workspace, name, partition),
    )
    row = await cur.fetchone()
    if row is None:
        return 0
    return int(row["seq"] if isinstance(row, dict) else row[0])


async def wait_applied(
    pool: Pool,
    name: str,
    partition: int,
    seq: int,
    timeout: float,
    workspace: str | None = None,
) -> bool:
    """Whether ``name`` applies position ``seq`` of ``partition`` (of ``workspace`` in it, if
    given) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        async with pool.connection() as conn:
            if await applied(conn, name, partition, workspace) >= seq:
                return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)


async def reset(conn: Connection, names: list[str]) -> None:
    """Move projections ``names`` back to the start of the log in every partition (in the
    caller's transaction): their running projectors notice and replay."""
    await conn.execute("UPDATE projection_positions SET seq = 0 WHERE name = ANY(%s)", (names,))
    await conn.execute("DELETE FROM projection_ahead WHERE name = ANY(%s)", (names,))
