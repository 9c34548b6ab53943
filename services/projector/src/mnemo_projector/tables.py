"""The Postgres read models this projector owns. Readers (gateway, ingest) rely on these names.

Their schema is in ``migrations/`` (applied by ``mnemo_runtime.migrate``).
"""

from __future__ import annotations

from psycopg import AsyncConnection

from mnemo_runtime.migrate import package_migrations

PROJECTION = "pg"
MIGRATIONS = package_migrations("mnemo_projector")

TABLES = (
    "workspaces", "peers", "sessions", "session_peers", "messages", "summaries", "scopes",
    "scope_sessions", "webhook_endpoints",
)  # fmt: skip


async def drop_projection(conn: AsyncConnection) -> None:
    """Empty every read model and reset the position to the start of the log, atomically."""
    async with conn.transaction():
        await conn.execute(
            "SELECT seq FROM projection_positions WHERE name = %s FOR UPDATE", (PROJECTION,)
        )
        await conn.execute(f"TRUNCATE {', '.join(TABLES)}")
        await conn.execute("UPDATE projection_positions SET seq = 0 WHERE name = %s", (PROJECTION,))
