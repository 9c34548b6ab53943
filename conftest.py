"""Fixtures for tests outside tests/integration that need a real Postgres (with pgvector),
migrated to Mnemo's schema, or a real JetStream.

Started on demand, once per run: the pgvector adapter's contract cases, the retrieval engine's
component tests and the contract cases of adapters on the bus use them; tests/integration has
its own servers and databases.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_cli.migrations import migrate_all_blocking
from mnemo_runtime.pg import open_pool
from mnemo_runtime.stack import LocalNats, LocalPostgres, free_port


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database of this run's own: on DATABASE_URL's server, else on a throwaway local one."""
    local = None
    admin = os.environ.get("DATABASE_URL")
    if admin is None:
        local = LocalPostgres(Path(tmp_path_factory.mktemp("pg")), free_port(), durable=False)
        admin = local.start()
    name = f"mnemo_unit_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    migrate_all_blocking(url)  # Mnemo's schema, as every process finds it
    yield url
    if local is not None:
        local.stop()


@pytest.fixture
async def pg_pool(pg_url: str) -> AsyncIterator[AsyncConnectionPool]:
    """A small pool on that server."""
    pool = await open_pool(pg_url, min_size=1, max_size=4)
    yield pool
    await pool.close()


@pytest.fixture(scope="session")
def js_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JetStream-enabled NATS server: NATS_URL's, else a throwaway local one."""
    if url := os.environ.get("NATS_URL"):
        yield url
        return
    local = LocalNats(Path(tmp_path_factory.mktemp("nats")), free_port())
    yield local.start()
    local.stop()
