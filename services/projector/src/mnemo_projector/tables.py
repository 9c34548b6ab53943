"""The Postgres read models the projections own. Readers (gateway, ingest) rely on these names.

Their schema is in ``migrations/`` (applied by ``mnemo_runtime.migrate``).
"""

from __future__ import annotations

from typing import Any

from mnemo_runtime import positions
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.pg import Connection
from mnemo_runtime.vectors import VectorIndex

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


async def drop_projection(
    conn: Connection, name: str = PROJECTION, tables: tuple[str, ...] = TABLES
) -> None:
    """Empty a projection's tables and reset its positions in every partition to the start of
    the log, atomically (a running projector notices and replays)."""
    async with conn.transaction():
        await conn.execute(
            "SELECT seq FROM projection_positions WHERE name = %s FOR UPDATE", (name,)
        )
        await conn.execute(f"TRUNCATE {', '.join(tables)}")
        await positions.reset(conn, [name])


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
    async with conn.transaction():
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
