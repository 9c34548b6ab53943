"""Postgres connection pool (psycopg 3, async)."""

from __future__ import annotations

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

# Session settings of every pooled connection. A filtered search of an HNSW graph (pgvector)
# keeps scanning until it has found as many rows as asked, in nearly increasing distance, instead
# of returning what passed the filter among the graph's first candidates. Postgres accepts the
# setting before the extension is loaded, and the extension takes it up when it is.
SESSION_SETTINGS = {"hnsw.iterative_scan": "relaxed_order"}


async def open_pool(dsn: str, min_size: int = 1, max_size: int = 8) -> AsyncConnectionPool:
    """Open a pool whose connections return rows as dicts and autocommit outside transactions."""

    async def configure(conn: AsyncConnection) -> None:
        conn.row_factory = dict_row  # type: ignore[assignment]
        await conn.set_autocommit(True)
        for name, value in SESSION_SETTINGS.items():
            await conn.execute("SELECT set_config(%s, %s, false)", (name, value))

    pool = AsyncConnectionPool(
        dsn, min_size=min_size, max_size=max_size, open=False, configure=configure, timeout=10
    )
    await pool.open(wait=True, timeout=30)
    return pool
