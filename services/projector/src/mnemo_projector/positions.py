"""A projection's contract and its stored position: what the runner advances, and how."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from psycopg import AsyncPipeline

from mnemo_runtime.pg import Connection
from mnemo_runtime.positions import applied
from mnemo_schema.events import Event


class Projection(Protocol):
    """One read model: its name (position rows), the events it reads, how it applies them.

    It applies each partition of the log on its own (``filters``), in log order (``fair``: in
    the log order of each workspace).
    """

    name: str
    applied_subject: str
    # Whether ``apply`` only writes (no row counts or results read back), so its statements can
    # be pipelined: sent together, their results read once at the end.
    pipelined: bool
    # Whether a partition's workspaces are taken in turns, each in its own log order
    # (``lines``), instead of the whole partition in log order. Only for a projection that
    # keeps nothing spanning two workspaces, and has no ``guarded`` statement.
    fair: bool

    def filters(self, partition: int) -> list[str]:
        """The stored subjects of the events it applies in ``partition``."""
        ...

    async def setup(self, conn: Connection) -> None:
        """Create what the read model needs (idempotent); once per process."""
        ...

    async def apply(self, conn: Connection, batch: Sequence[tuple[int, Event]]) -> None:
        """Apply events in order inside the caller's transaction."""
        ...

    async def idle(self) -> None:
        """Upkeep while no events arrive (called about twice a second then)."""
        ...

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> tuple[str, tuple[Any, ...]] | None:
        """The whole batch as one data-modifying statement, if the batch allows it.

        The statement runs as the effect of ``_GUARDED``, beside the position's update: it must
        change rows only while the common table ``pos`` has a row, i.e. while the position is
        being advanced, and change nothing otherwise. None: apply in a transaction instead.
        """
        ...


# Effect and position in one autocommitted statement: one round trip where a transaction costs
# five statements (measured, one message: 0.25 ms of client CPU instead of 0.8-1.0, and less than
# half the server's). ``synchronous_commit`` is off for it, as for the transaction below.
_GUARDED = (
    "WITH pos AS (UPDATE projection_positions SET seq = %s WHERE name = %s AND partition = %s"
    " AND seq = %s RETURNING 1), effect AS ({effect})"
    " SELECT count(*) AS advanced, set_config('synchronous_commit', 'off', true) FROM pos"
)


async def advance_guarded(
    conn: Connection,
    name: str,
    partition: int,
    statement: tuple[str, tuple[Any, ...]],
    position: int,
    last: int,
) -> bool:
    """Run a projection's guarded statement and move its position in ``partition`` from
    ``position`` to ``last``, atomically; False, with nothing changed, if the stored position is
    not ``position``."""
    cur = await conn.execute(
        _GUARDED.format(effect=statement[0]), (last, name, partition, position, *statement[1])
    )
    row = await cur.fetchone()
    return row is not None and row["advanced"] == 1


async def read_position(conn: Connection, name: str, partition: int) -> int:
    """The last applied stream position of projection ``name`` in ``partition``."""
    return await applied(conn, name, partition)


async def ensure_position(conn: Connection, name: str, partition: int) -> None:
    """The position row of ``name`` in ``partition`` (at the start of the log if new)."""
    await conn.execute(
        "INSERT INTO projection_positions (name, partition, seq) VALUES (%s, %s, 0)"
        " ON CONFLICT DO NOTHING",
        (name, partition),
    )


async def read_ahead(conn: Connection, name: str, partition: int) -> dict[str, int]:
    """The workspaces of ``partition`` that ``name`` has applied past the partition's position,
    and how far."""
    cur = await conn.execute(
        "SELECT workspace, seq FROM projection_ahead WHERE name = %s AND partition = %s",
        (name, partition),
    )
    rows: list[Any] = await cur.fetchall()
    return {str(r["workspace"]): int(r["seq"]) for r in rows}


async def mark_failing(conn: Connection, name: str, partition: int, error: str | None) -> None:
    """Record that the projection is failing with ``error`` (since when it first failed), or,
    with None, that it is not."""
    await conn.execute(
        "UPDATE projection_positions SET failing_since = CASE WHEN %s::text IS NULL"
        " THEN NULL ELSE COALESCE(failing_since, now()) END, last_error = %s"
        " WHERE name = %s AND partition = %s",
        (error, error, name, partition),
    )


async def move_floor(
    conn: Connection,
    name: str,
    partition: int,
    position: int,
    floor: int,
    ahead: tuple[str, int] | None,
    pipeline: AsyncPipeline | None = None,
) -> bool:
    """In the caller's transaction: move the floor from ``position`` to ``floor``; False if it
    was not at ``position``. A fair projection also records how far one workspace is
    (``ahead``: the workspace and its last applied seq) and forgets what the floor has passed."""
    key = (name, partition)
    cur = await conn.execute(
        "UPDATE projection_positions SET seq = %s WHERE name = %s AND partition = %s AND seq = %s",
        (floor, *key, position),
    )
    if ahead is not None:
        workspace, last = ahead
        if workspace and last > floor:
            await conn.execute(
                "INSERT INTO projection_ahead (name, partition, workspace, seq)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (name, partition, workspace)"
                " DO UPDATE SET seq = EXCLUDED.seq",
                (*key, workspace, last),
            )
        if floor > position or last <= floor:
            await conn.execute(
                "DELETE FROM projection_ahead WHERE name = %s AND partition = %s AND seq <= %s",
                (*key, floor),
            )
    if pipeline is not None:
        await pipeline.sync()
    return cur.rowcount == 1
