"""``mnemo migrate`` (the chart's pre-install / pre-upgrade Job) on real NATS and Postgres."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import nats
import psycopg

from mnemo_schema import subjects
from mnemo_schema.dreams import DREAM_SCHEDULER_DURABLE, DREAMER_DURABLE

from .conftest import new_database

PARTITIONS = 3
DURABLES = {
    *(subjects.stage_durable(stage, p) for stage in ("deriver", "summarizer") for p in range(3)),
    DREAMER_DURABLE,
    DREAM_SCHEDULER_DURABLE,
}
DERIVER_P2 = subjects.stage_durable("deriver", 2)


def _migrate(nats_url: str, db: str, **env: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "mnemo_cli", "migrate"],
        env={**os.environ, "NATS_URL": nats_url, "DATABASE_URL": db, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


async def _consumers(nats_url: str) -> dict[str, float]:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        infos = await js.consumers_info(subjects.STREAM)
        await js.stream_info(subjects.DEAD_LETTER_STREAM)  # raises if missing
        return {i.name: float(i.config.ack_wait or 0) for i in infos}
    finally:
        await nc.close()


def test_migrate_creates_streams_consumers_and_tables_and_updates_on_rerun(
    own_nats: str, pg_admin_url: str
) -> None:
    fresh_database = new_database(pg_admin_url, migrated=False)
    out = _migrate(own_nats, fresh_database, MNEMO_PARTITIONS=str(PARTITIONS))
    assert f"({PARTITIONS} partitions)" in out and "consumer deriver-p0" in out
    acks = asyncio.run(_consumers(own_nats))
    assert set(acks) == DURABLES
    assert acks[DERIVER_P2] == 600.0
    with psycopg.connect(fresh_database) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        }
        indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")}
    assert {
        "projection_positions",
        "workspaces",
        "peers",
        "sessions",
        "session_peers",
        "messages",
        "summaries",
        "observations",
        "observation_sources",
        "peer_cards",
        "work_lines",
        "work_sessions",
        "dreams",
        "dream_schedule",
    } <= tables
    assert {"search_terms_by_term", "dead_letters_open"} <= indexes
    # An upgrade that changes a stage's settings updates its consumers in place; the partition
    # count is the stream's (unset, or the same).
    _migrate(own_nats, fresh_database, MNEMO_DERIVER_ACK_WAIT_S="45")
    acks = asyncio.run(_consumers(own_nats))
    assert acks[DERIVER_P2] == 45.0
    assert set(acks) == DURABLES


def test_migrate_refuses_a_partition_count_the_stream_does_not_have(
    own_nats: str, pg_admin_url: str
) -> None:
    fresh_database = new_database(pg_admin_url, migrated=False)
    _migrate(own_nats, fresh_database, MNEMO_PARTITIONS="4")
    run = subprocess.run(
        [sys.executable, "-m", "mnemo_cli", "migrate"],
        env={
            **os.environ,
            "NATS_URL": own_nats,
            "DATABASE_URL": fresh_database,
            "MNEMO_PARTITIONS": "6",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "MNEMO_PARTITIONS is 6 but the stream MNEMO_EVENTS has 4 partitions" in run.stderr
