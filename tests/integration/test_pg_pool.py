"""The Postgres pool every process opens (``mnemo_runtime.pg``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo_runtime.pg import open_pool
from mnemo_runtime.priority import BackendPriority


async def test_a_pools_connections_carry_the_processs_name(database_url: str) -> None:
    named = await open_pool(database_url, name="mnemo-projector")
    given = await open_pool(database_url + "?application_name=ops", name="mnemo-projector")
    try:
        for pool, expected in ((named, "mnemo-projector"), (given, "ops")):
            async with pool.connection() as conn:
                row = await (await conn.execute("SHOW application_name")).fetchone()
            assert row == {"application_name": expected}
    finally:
        await named.close()
        await given.close()


def _niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


async def test_a_background_processs_backends_take_its_niceness(database_url: str) -> None:
    priority = BackendPriority(15)
    pool = await open_pool(database_url, min_size=1, max_size=2, on_connect=priority.joined)
    try:
        async with pool.connection() as conn:
            pid = conn.info.backend_pid
            if not Path(f"/proc/{pid}/comm").exists():
                pytest.skip("the test Postgres does not run on this host")
            before = _niceness(pid)
            priority.start()
            assert _niceness(pid) == max(before, 15)
            # Work on the reniced backend still answers.
            row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
            assert row == {"pid": pid}
    finally:
        await pool.close()
