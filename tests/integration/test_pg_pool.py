"""The Postgres pool every process opens (``mnemo_runtime.pg``)."""

from __future__ import annotations

from mnemo_runtime.pg import open_pool


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
