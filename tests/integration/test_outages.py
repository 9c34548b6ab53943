"""Consumers, projections and pools come back by themselves after the bus or the database was
away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from nats.js.api import StreamConfig
from psycopg import AsyncConnection

from mnemo_projector.runner import Projector
from mnemo_runtime.bus import connect
from mnemo_runtime.infra import open_infra
from mnemo_runtime.pg import open_pool
from mnemo_runtime.stack import LocalNats, LocalPostgres, free_port
from mnemo_runtime.work import DurablePull, stage_consumer
from mnemo_schema import subjects
from mnemo_schema.events import Event, MessagePosted, encode_event


async def _next(pull: DurablePull, timeout: float = 20.0) -> list[bytes]:
    """What the next fetch that gets anything gets (acknowledged), within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msgs = await pull.fetch(10, timeout=0.25)
        if msgs:
            for m in msgs:
                await m.ack()
            return [m.data for m in msgs]
    raise AssertionError(f"nothing fetched within {timeout}s")


async def test_a_durable_pull_binds_again_after_the_bus_was_away(tmp_path: Path):
    server = LocalNats(tmp_path / "nats", free_port())
    nc = await connect(server.start(), "test-outage")
    js = nc.jetstream(timeout=2)
    try:
        await js.add_stream(StreamConfig(name="OUTAGE", subjects=["outage.>"]))
        pull = DurablePull(js, stage_consumer("outage.>", "stage", ack_wait=30), "OUTAGE", 0.1)
        # The server goes away before the consumer is first bound, as when a stage starts
        # during a broker restart: the fetch finds nothing, and does not end the stage.
        server.stop()
        assert await asyncio.wait_for(pull.fetch(1, timeout=0.25), 15) == []
        server.start()
        await js.publish("outage.a", b"after the restart")
        assert await _next(pull) == [b"after the restart"]
        # The durable deleted under it: bound (made) again, reading on.
        await js.delete_consumer("OUTAGE", "stage")
        await js.publish("outage.a", b"after the delete")
        assert b"after the delete" in await _next(pull)
        await pull.close()
    finally:
        await nc.close()
        server.stop()


class _Slow:
    """A projection whose batches take as long as the test says (``release``)."""

    name = "outage-marks"
    applied_subject = "mnemo.test.outage.applied"
    pipelined = False
    fair = False

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.applying = asyncio.Event()

    def filters(self, partition: int) -> list[str]:
        return [subjects.message_filter(partition)]

    async def setup(self, conn: AsyncConnection) -> None:
        return None

    async def apply(self, conn: AsyncConnection, batch: Sequence[tuple[int, Event]]) -> None:
        self.applying.set()
        await self.release.wait()

    async def idle(self) -> None:
        return None

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> None:
        return None


def _failing_since(db: str, name: str) -> object:
    with psycopg.connect(db) as conn:
        return conn.execute(
            "SELECT failing_since FROM projection_positions WHERE name = %s", (name,)
        ).fetchone()[0]


async def test_a_projection_clears_a_failing_mark_once_it_follows_the_log_again(
    own_nats, fresh_database
):
    infra = await open_infra(own_nats, fresh_database, "test-marks")
    projection = _Slow()
    workspace = "marked"
    projector = Projector(
        projection,
        infra.nc,
        infra.js,
        infra.pool,
        partitions=infra.partitions,
        partition=subjects.partition_of(workspace, infra.partitions),
    )
    await projector.setup()
    # What a process killed while the database was away leaves behind: a partition marked as
    # failing (/ready says 503 while it is); and a backlog whose first batch takes long.
    async with infra.pool.connection() as conn:
        await conn.execute(
            "UPDATE projection_positions SET failing_since = now(), last_error = 'AdminShutdown'"
            " WHERE name = %s",
            (projection.name,),
        )
    event = MessagePosted(
        workspace=workspace,
        session_id="s",
        message_id="m1",
        peer_id="a",
        content="x",
        metadata={},
        created_at=datetime.now(UTC),
        token_count=1,
    )
    await infra.js.publish(event.subject(), encode_event(event))
    stop = asyncio.Event()
    task = asyncio.create_task(projector.run(stop))
    try:
        await asyncio.wait_for(projection.applying.wait(), 20)
        deadline = time.monotonic() + 20
        while _failing_since(fresh_database, projection.name) is not None:
            assert time.monotonic() < deadline, "the failing mark was not cleared"
            assert not task.done(), task
            await asyncio.sleep(0.1)
        assert not projection.release.is_set()  # cleared while the batch is still applying
    finally:
        projection.release.set()
        stop.set()
        await asyncio.wait_for(task, 10)
        await infra.close()


async def test_a_pool_hands_out_live_connections_after_the_database_restarts(tmp_path: Path):
    server = LocalPostgres(tmp_path / "pg", free_port(), durable=False)
    pool = await open_pool(server.start(), min_size=4, max_size=4)
    try:

        async def query() -> int:
            async with pool.connection() as conn:
                await conn.execute("SELECT pg_sleep(0.05)")
                return int((await (await conn.execute("SELECT 1 AS one")).fetchone())["one"])

        assert await asyncio.gather(*(query() for _ in range(4))) == [1] * 4  # four in the pool
        server.stop()
        server.start()
        # Each of the four idle connections is dead now; none may fail a request given it.
        assert await asyncio.wait_for(asyncio.gather(*(query() for _ in range(4))), 20) == [1] * 4
        assert await query() == 1
    finally:
        await pool.close()
        server.stop()
