"""The Postgres read models the projections own. Readers (gateway, ingest) rely on these names.

Their schema is in ``migrations/`` (applied by ``mnemo_runtime.migrate``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import errors

from mnemo_projector.quarantine import RetryPolicy
from mnemo_runtime import positions
from mnemo_runtime.logging import get_logger
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.pg import Connection
from mnemo_runtime.vectors import VectorIndex

log = get_logger("mnemo.projector.tables")

PROJECTION = positions.ENTITIES
MIGRATIONS = package_migrations("mnemo_projector")

TABLES = (
    "workspaces",
    "peers",
    "sessions",
    "session_peers",
    "messages",
    "scopes",
    "scope_sessions",
    "webhook_endpoints",
    "work_lines",
    "work_sessions",
)


# A drop takes each of its tables' ACCESS EXCLUSIVE lock in turn while the running services
# go on reading and writing them: a transaction that holds one of the later tables and then asks
# for one the drop already holds closes a cycle, and Postgres aborts one side (a deadlock). The
# drop is one transaction, so it is tried again from the start; while it waits for a lock every
# read of that table queues behind it, so a wait is bounded (``LOCK_WAIT``) and tried again too.
DROP_RETRY = RetryPolicy(attempts=20, pauses_s=(0.1, 0.2, 0.4, 0.8, 1.6, 2.0))
LOCK_WAIT = "5s"


async def exclusively(conn: Connection, what: str, body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` in one transaction on ``conn``, again from the start when it lost a
    deadlock or waited ``LOCK_WAIT`` for a lock, as ``DROP_RETRY`` says."""
    for attempt in range(1, DROP_RETRY.attempts + 1):
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
                await body()
            return
        except (errors.DeadlockDetected, errors.LockNotAvailable) as e:
            if attempt == DROP_RETRY.attempts:
                raise
            log.warning("drop_retried", what=what, attempt=attempt, reason=type(e).__name__)
            await DROP_RETRY.pause(attempt)


async def drop_projection(
    conn: Connection, name: str = PROJECTION, tables: tuple[str, ...] = TABLES
) -> None:
    """Empty a projection's tables and reset its positions in every partition to the start of
    the log, atomically (a running projector notices and replays)."""

    async def drop() -> None:
        await conn.execute(
            "SELECT seq FROM projection_positions WHERE name = %s FOR UPDATE", (name,)
        )
        await conn.execute(f"TRUNCATE {', '.join(tables)}")
        await positions.reset(conn, [name])

    await exclusively(conn, name, drop)


# What memory formation's projections hold: the memory projection (observations, their aliases,
# provenance and rejections, peer cards, summaries, dreams, formed lines) and the passage projection (message
# passages; both index their words in the lexicon).
MEMORY_TABLES = (
    "observations",
    "observation_aliases",
    "observation_sources",
    "observation_rejections",
    "peer_cards",
    "summaries",
    "dreams",
    "formed_lines",
    "search_terms",
    "search_df",
    "search_docs",
)
MEMORY_PROJECTIONS = (positions.MEMORY, positions.PASSAGES)


async def drop_memory(conn: Connection, index: VectorIndex) -> None:
    """Empty the memory and passage projections (vectors included) and reset their positions
    in every partition to the start of the log, atomically (running projectors replay)."""

    async def drop() -> None:
        await conn.execute(
            "SELECT seq FROM projection_positions WHERE name = ANY(%s) FOR UPDATE",
            (list(MEMORY_PROJECTIONS),),
        )
        cur = await conn.execute("SELECT id FROM observations")
        ids = [r["id"] for r in await cur.fetchall()]
        # In this transaction when the vectors live in Postgres; otherwise now, which a
        # rolled-back rebuild leaves harmless (the replay writes the same points again).
        await index.delete(ids, conn=conn)
        tables = list(MEMORY_TABLES)
        cur = await conn.execute("SELECT to_regclass('message_passages') IS NOT NULL AS made")
        made: Any = await cur.fetchone()
        if made["made"]:
            tables.append("message_passages")
        await conn.execute(f"TRUNCATE {', '.join(tables)}")
        await positions.reset(conn, list(MEMORY_PROJECTIONS))

    await exclusively(conn, "memory", drop)
