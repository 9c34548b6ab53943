"""Postgres connection pool (psycopg 3, async)."""

from __future__ import annotations

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool


async def open_pool(dsn: str, min_size: int = 1, max_size: int = 8) -> AsyncConnectionPool:
    """Open a pool whose connections return rows as dicts and autocommit outside transactions."""

    async def configure(conn: AsyncConnection) -> None:
        conn.row_factory = dict_row  # type: ignore[assignment]
        await conn.set_autocommit(True)

    pool = AsyncConnectionPool(
        dsn, min_size=min_size, max_size=max_size, open=False, configure=configure, timeout=10
    )
    await pool.open(wait=True, timeout=30)
    return pool
