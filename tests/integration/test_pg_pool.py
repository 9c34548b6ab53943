"""The Postgres pool every process opens (``mnemo_runtime.pg``)."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from mnemo_runtime.pg import literal_cursor, open_pool
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


async def test_a_literal_statement_is_planned_for_its_values_where_plans_are_generic(
    database_url: str,
) -> None:
    pool = await open_pool(
        database_url, min_size=1, max_size=1, settings={"plan_cache_mode": "force_generic_plan"}
    )
    plans: list[str] = []
    try:
        async with pool.connection() as conn:
            row = await (await conn.execute("SHOW plan_cache_mode")).fetchone()
            assert row == {"plan_cache_mode": "force_generic_plan"}
            # Each statement's plan comes back as a notice.
            conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
            try:
                await conn.execute("LOAD 'auto_explain'")
            except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFile):
                pytest.skip("the test Postgres does not let this user load auto_explain")
            await conn.execute("SET auto_explain.log_min_duration = 0")
            await conn.execute("SET auto_explain.log_level = notice")
            await conn.execute("CREATE TEMP TABLE planned (x int)")
            sql = "SELECT x FROM planned WHERE x = %s"
            await conn.execute(sql, [41], prepare=True)
            await literal_cursor(conn, dict_row).execute(sql, [42])
    finally:
        await pool.close()
    filters = [line.strip() for p in plans for line in p.splitlines() if "Filter:" in line]
    assert filters == ["Filter: (x = $1)", "Filter: (x = 42)"]


async def test_json_numbers_come_back_as_they_were_written(database_url: str) -> None:
    """Postgres writes a jsonb number back without exponent (1e20 as 21 digits): a float
    beyond 64-bit integers is read as that float, and every integer that fits stays one."""
    written = {
        "floats": [1e20, -1.7976931348623155e308, 9.223372036854776e18, 2.5e-300, 0.1, 5.0],
        "ints": [0, 2**63 - 1, -(2**63), 12, -7],
        "nested": {"k": [False, None, [1e19, {"x": -3e40}]]},
    }
    pool = await open_pool(database_url, min_size=1, max_size=1)
    try:
        async with pool.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT %s::jsonb AS b, %s::jsonb::text AS t, %s::json AS j",
                    (Jsonb(written), Jsonb(written), Jsonb(written)),
                )
            ).fetchone()
    finally:
        await pool.close()
    assert row is not None
    assert "100000000000000000000" in row["t"]  # how Postgres keeps it
    for got in (row["b"], row["j"]):
        assert got == written
        assert [type(v) for v in got["floats"]] == [float] * 6
        assert [type(v) for v in got["ints"]] == [int] * 5


def _niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _policy(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[38])


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
            assert _policy(pid) == os.SCHED_OTHER  # SCHED_IDLE only when asked
            # Work on the reniced backend still answers.
            row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
            assert row == {"pid": pid}
    finally:
        await pool.close()


async def test_an_idle_processs_backends_run_under_sched_idle(database_url: str) -> None:
    """Asked for, each backend serving the process runs under SCHED_IDLE (a nice-0 task that
    wakes takes its core at once), the ones that joined before ``start`` and after it."""
    priority = BackendPriority(15, idle=True)
    pool = await open_pool(database_url, min_size=1, max_size=3, on_connect=priority.joined)
    try:
        async with pool.connection() as first, pool.connection() as second:
            pid = first.info.backend_pid
            if not Path(f"/proc/{pid}/comm").exists():
                pytest.skip("the test Postgres does not run on this host")
            assert _policy(pid) == os.SCHED_OTHER  # not before start
            priority.start()
            assert _policy(pid) == os.SCHED_IDLE and _niceness(pid) >= 15
            assert _policy(second.info.backend_pid) == os.SCHED_IDLE
            row = await (await second.execute("SELECT 1 AS one")).fetchone()
            assert row == {"one": 1}
        async with pool.connection() as a, pool.connection() as b, pool.connection() as c:
            for conn in (a, b, c):  # one opened after start, when the pool grew
                assert _policy(conn.info.backend_pid) == os.SCHED_IDLE
    finally:
        await pool.close()
