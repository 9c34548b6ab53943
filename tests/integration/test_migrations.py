"""Schema migrations on a real Postgres: applied once, concurrently safe, crash-safe."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import psycopg
from structlog.testing import capture_logs

from mnemo_cli.migrations import SOURCES, migrate_all
from mnemo_runtime.migrate import MIGRATION_TABLE, migrate

from .conftest import new_database


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    return {r[0] for r in rows}


async def test_every_migration_applies_once(pg_admin_url):
    url = new_database(pg_admin_url, migrated=False)
    files = sorted(p.stem for source in SOURCES for p in source.glob("*.sql"))
    with capture_logs() as logs:
        applied = await migrate_all(url)
    assert sorted(applied) == files
    # Each said as it starts and as it ends (with its time), in the order applied.
    said = [(e["event"], e["migration"]) for e in logs if "migration" in e]
    assert said == [
        (event, m) for m in applied for event in ("migrations.applying", "migrations.applied_one")
    ]
    assert all(e["seconds"] >= 0 for e in logs if e["event"] == "migrations.applied_one")
    # Dependencies first: positions before the tables whose migrations record a position.
    assert applied[0] == "runtime-0001-projection-positions"
    expected = {
        "workspaces",
        "messages",
        "observations",
        "work_lines",
        "work_sessions",
        "dreams",
        "dream_schedule",
    }
    assert expected <= _tables(url)
    assert await migrate_all(url) == []
    with psycopg.connect(url) as conn:
        recorded = conn.execute(f"SELECT migration_id FROM {MIGRATION_TABLE}").fetchall()
    assert sorted(r[0] for r in recorded) == files


async def test_concurrent_migrations_apply_each_file_once(pg_admin_url):
    url = new_database(pg_admin_url, migrated=False)
    results = await asyncio.gather(*(migrate_all(url) for _ in range(4)))
    applied = [m for r in results for m in r]
    assert sorted(applied) == sorted(p.stem for s in SOURCES for p in s.glob("*.sql"))


async def test_a_database_made_by_the_earlier_schema_code_upgrades(pg_admin_url):
    # Deployments from before the migrations have the tables already (created IF NOT EXISTS).
    url = new_database(pg_admin_url, migrated=False)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE projection_positions (name text PRIMARY KEY, seq bigint NOT NULL)"
        )
        conn.execute("INSERT INTO projection_positions VALUES ('pg', 42)")
    await migrate_all(url)
    with psycopg.connect(url) as conn:
        seq = conn.execute("SELECT seq FROM projection_positions WHERE name = 'pg'").fetchone()
    assert seq == (42,)  # kept, not reset


async def test_a_migrator_killed_holding_the_lock_blocks_nobody(pg_admin_url):
    url = new_database(pg_admin_url, migrated=False)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, psycopg, time\n"
            "c = psycopg.connect(sys.argv[1], autocommit=True)\n"
            "c.execute(\"SELECT pg_advisory_lock(hashtextextended('mnemo.schema-migrations', 0))\")\n"
            "print('locked', flush=True)\n"
            "time.sleep(600)\n",
            url,
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"locked"
        waiting = asyncio.ensure_future(migrate_all(url))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # serialised behind the holder
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        applied = await asyncio.wait_for(waiting, 30)
        assert applied
    finally:
        if holder.poll() is None:
            holder.kill()


async def test_provenance_edges_take_their_observations_representation(pg_admin_url, tmp_path):
    """memory-0006 on a database made before it: each edge takes its observation's (observer,
    observed), and an edge whose observation is gone goes."""
    url = new_database(pg_admin_url, migrated=False)
    before = []
    for i, source in enumerate(SOURCES):
        copy = tmp_path / str(i)
        copy.mkdir()
        for sql in source.glob("*.sql"):
            if sql.stem != "memory-0006-sources-by-representation":
                (copy / sql.name).write_text(sql.read_text())
        before.append(copy)
    await migrate(url, before)
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO observations (workspace, id, observer, observed, level, content,"
            " content_key, origin, created_at, seq) VALUES"
            " ('w', 'o1', 'ann', 'bob', 'explicit', 'Bob rows.', 'bob rows', 'deriver', now(), 1)"
        )
        conn.execute(
            "INSERT INTO observation_sources (workspace, observation_id, source_kind, source_id)"
            " VALUES ('w', 'o1', 'message', 'm1'), ('w', 'gone', 'message', 'm1')"
        )
    assert await migrate_all(url) == ["memory-0006-sources-by-representation"]
    with psycopg.connect(url) as conn:
        edges = conn.execute(
            "SELECT observation_id, observer, observed FROM observation_sources"
        ).fetchall()
    assert edges == [("o1", "ann", "bob")]
