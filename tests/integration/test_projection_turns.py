"""A projection that takes a partition's workspaces in turns: a workspace sharing its partition
with another's backlog is applied without waiting for all of it, every event exactly once, also
across a projector stopped mid-backlog and started again, and with a backlog larger than it may
hold (real JetStream and Postgres)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from psycopg import AsyncConnection

from mnemo_projector.runner import Projector
from mnemo_runtime import positions
from mnemo_runtime.infra import Infra, open_infra
from mnemo_schema import subjects
from mnemo_schema.events import Event, MessagePosted, encode_event

from .conftest import neighbour

NAME = "turns"
BATCH = 10


class _Turns:
    """Records each event it applies, and how often; each event costs it some time, as an
    embedding would."""

    name = NAME
    applied_subject = "mnemo.projector.turns.applied"
    pipelined = False
    fair = True

    def __init__(self) -> None:
        # The projector applying it, if told: how many events it held at each batch.
        self.projector: Projector | None = None
        self.held: list[int] = []

    def filters(self, partition: int) -> list[str]:
        return [subjects.message_filter(partition)]

    async def setup(self, conn: AsyncConnection) -> None:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS turns (seq bigint PRIMARY KEY, workspace text NOT NULL,"
            " applied integer NOT NULL, turn bigserial)"
        )

    async def apply(self, conn: AsyncConnection, batch: Sequence[tuple[int, Event]]) -> None:
        if self.projector is not None:
            self.held.append(self.projector.intake.held)
        for seq, event in batch:
            await conn.execute("SELECT pg_sleep(0.004)")
            await conn.execute(
                "INSERT INTO turns (seq, workspace, applied) VALUES (%s, %s, 1)"
                " ON CONFLICT (seq) DO UPDATE SET applied = turns.applied + 1",
                (seq, event.workspace),
            )

    async def idle(self) -> None:
        return None

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> None:
        return None


@dataclass
class _Two:
    """A partition's two workspaces: A, whose backlog the tests post, and B, its neighbour."""

    infra: Infra
    a: str
    b: str
    partition: int


@pytest.fixture
async def two(own_nats: str, fresh_database: str) -> AsyncIterator[_Two]:
    infra = await open_infra(own_nats, fresh_database, "test-turns")
    a = "turns-a"
    try:
        yield _Two(
            infra, a, neighbour(a, infra.partitions), subjects.partition_of(a, infra.partitions)
        )
    finally:
        await infra.close()


async def _post(infra: Infra, workspace: str, n: int) -> list[int]:
    seqs = []
    for i in range(n):
        event = MessagePosted(
            workspace=workspace,
            session_id="s",
            message_id=f"m{i}",
            peer_id="a",
            content="x",
            metadata={},
            created_at=datetime.now(UTC),
            token_count=1,
        )
        ack = await infra.js.publish(event.subject(), encode_event(event))
        seqs.append(ack.seq)
    return seqs


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"condition not met within {timeout}s"
        await asyncio.sleep(0.01)


async def _rows(infra: Infra, sql: str, *args: object) -> list[Any]:
    async with infra.pool.connection() as conn:
        cur = await conn.execute(sql, args)
        return await cur.fetchall()


async def _projector(infra: Infra, partition: int, max_held: int = 20_000) -> Projector:
    projection = _Turns()
    async with infra.pool.connection() as conn:
        await projection.setup(conn)
    projector = Projector(
        projection,
        infra.nc,
        infra.js,
        infra.pool,
        BATCH,
        partition=partition,
        partitions=infra.partitions,
        max_held=max_held,
    )
    projection.projector = projector
    await projector.setup()
    return projector


async def _applied_of(infra: Infra, workspace: str) -> int:
    rows = await _rows(infra, "SELECT count(*) AS n FROM turns WHERE workspace = %s", workspace)
    return int(rows[0]["n"])


async def _run_until_applied(
    infra: Infra, partition: int, workspace: str, stop: asyncio.Event
) -> asyncio.Task[None]:
    """A projector of ``partition`` running until ``stop``, once it has applied ``workspace``'s
    one event."""
    projector = await _projector(infra, partition)
    task = asyncio.create_task(projector.run(stop))

    async def applied() -> bool:
        return await _applied_of(infra, workspace) == 1

    await _until(applied)
    return task


async def test_a_neighbour_of_a_backlog_is_applied_in_its_turn(two: _Two) -> None:
    infra, a, b, partition = two.infra, two.a, two.b, two.partition
    backlog = await _post(infra, a, 200)
    (late,) = await _post(infra, b, 1)
    stop = asyncio.Event()
    task = await _run_until_applied(infra, partition, b, stop)
    # In log order B would come after all 200 of A's; in turns, after a batch or two.
    assert await _applied_of(infra, a) <= 5 * BATCH
    async with infra.pool.connection() as conn:
        assert await positions.applied(conn, NAME, partition, b) >= late
        assert await positions.applied(conn, NAME, partition) < late

    async def all_applied() -> bool:
        return await _applied_of(infra, a) == 200

    await _until(all_applied)
    await _until(lambda: _floor_at(infra, partition, backlog[-1], late))
    stop.set()
    await task
    rows = await _rows(infra, "SELECT applied FROM turns")
    assert len(rows) == 201 and {r["applied"] for r in rows} == {1}
    assert await _rows(infra, "SELECT * FROM projection_ahead WHERE name = %s", NAME) == []


async def _floor_at(infra: Infra, partition: int, *seqs: int) -> bool:
    async with infra.pool.connection() as conn:
        return await positions.applied(conn, NAME, partition) >= max(seqs)


async def test_a_projector_stopped_past_its_floor_applies_nothing_twice(two: _Two) -> None:
    infra, a, b, partition = two.infra, two.a, two.b, two.partition
    await _post(infra, a, 100)
    (late,) = await _post(infra, b, 1)
    more = await _post(infra, a, 60)
    stop = asyncio.Event()
    task = await _run_until_applied(infra, partition, b, stop)
    task.cancel()  # as a kill would: mid-batch, nothing more committed
    await asyncio.gather(task, return_exceptions=True)
    async with infra.pool.connection() as conn:
        floor = await positions.applied(conn, NAME, partition)
        assert floor < late <= await positions.applied(conn, NAME, partition, b)

    again = await _projector(infra, partition)
    assert await asyncio.wait_for(again.catch_up(), 60) >= more[-1]
    rows = await _rows(infra, "SELECT workspace, applied FROM turns ORDER BY seq")
    assert len(rows) == 161 and {r["applied"] for r in rows} == {1}
    assert sum(r["workspace"] == b for r in rows) == 1


async def test_a_backlog_beyond_what_a_projector_holds_is_received_as_room_frees(two: _Two) -> None:
    infra, a, b, partition = two.infra, two.a, two.b, two.partition
    await _post(infra, a, 150)
    await _post(infra, b, 20)
    last = (await _post(infra, a, 30))[-1]
    projector = await _projector(infra, partition, max_held=4 * BATCH)
    assert await asyncio.wait_for(projector.catch_up(), 60) >= last
    # A's events past its share were let go and read again from the log several times,
    # and it never held more than it may.
    assert projector.intake.refills >= 3
    held = cast(_Turns, projector.projection).held
    assert held and max(held) <= 4 * BATCH
    rows = await _rows(infra, "SELECT workspace, applied FROM turns ORDER BY seq")
    assert len(rows) == 200 and {r["applied"] for r in rows} == {1}
    assert sum(r["workspace"] == b for r in rows) == 20


async def test_a_neighbour_of_a_backlog_beyond_what_a_projector_holds_is_not_held_back(
    two: _Two,
) -> None:
    """A's backlog fills the partition's hold; B's events, after all of it in the log, are
    still received and applied in their turn, not once A's backlog has made room."""
    infra, a, b, partition = two.infra, two.a, two.b, two.partition
    backlog = await _post(infra, a, 300)
    late = await _post(infra, b, 5)
    more = await _post(infra, a, 40)  # A goes on posting: read again after B's
    projector = await _projector(infra, partition, max_held=4 * BATCH)
    stop = asyncio.Event()
    task = asyncio.create_task(projector.run(stop))

    async def b_applied() -> bool:
        return await _applied_of(infra, b) == len(late)

    await _until(b_applied)
    # Held at most 40 at once: in log order B would wait for about 300 of A's events.
    assert await _applied_of(infra, a) <= 10 * BATCH
    async with infra.pool.connection() as conn:
        assert await positions.applied(conn, NAME, partition, b) >= late[-1]
        assert await positions.applied(conn, NAME, partition) < backlog[-1]

    async def all_applied() -> bool:
        return await _applied_of(infra, a) == len(backlog) + len(more)

    await _until(all_applied)
    await _until(lambda: _floor_at(infra, partition, more[-1]))
    stop.set()
    await task
    rows = await _rows(infra, "SELECT workspace, applied FROM turns ORDER BY seq")
    assert len(rows) == 345 and {r["applied"] for r in rows} == {1}
    held = cast(_Turns, projector.projection).held
    assert held and max(held) <= 4 * BATCH
    assert await _rows(infra, "SELECT * FROM projection_ahead WHERE name = %s", NAME) == []


@pytest.mark.parametrize("kept", [2, 3], ids=["all-let-go-erased", "some-read-again"])
async def test_events_let_go_then_erased_from_the_log_do_not_hold_the_floor(
    two: _Two, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events of A let go past its share and then deleted from the log (as an erasure deletes
    a workspace's) are not waited for: the log holds nothing of A left to read, and the floor
    moves on. A holds ``2 * BATCH`` (its share): every event let go is erased (``kept`` 2, so
    the re-read delivers nothing), or all but the first batch of them (3)."""
    infra, a, b, partition = two.infra, two.a, two.b, two.partition
    backlog = await _post(infra, a, 100)
    (late,) = await _post(infra, b, 1)
    projector = await _projector(infra, partition, max_held=4 * BATCH)
    intake = projector.intake
    start_refill = intake._start_refill
    erased: list[int] = []

    async def erased_before_read_again(workspace: str, start: int) -> None:
        # Erased between being let go and the first re-read of them (erasing at the next
        # batch instead would race a re-read begun as the first batch made room).
        if not erased:
            assert workspace == a and workspace in intake.gapped
            erased.extend(backlog[kept * BATCH :])
            for seq in erased:
                await infra.js.delete_msg(subjects.STREAM, seq)
        await start_refill(workspace, start)

    monkeypatch.setattr(intake, "_start_refill", erased_before_read_again)
    stop = asyncio.Event()
    task = asyncio.create_task(projector.run(stop))
    await _until(lambda: _floor_at(infra, partition, late), timeout=30)
    stop.set()
    await task
    assert erased, "A's backlog was let go past its share"
    rows = await _rows(infra, "SELECT seq, applied FROM turns ORDER BY seq")
    assert {r["applied"] for r in rows} == {1}
    assert {r["seq"] for r in rows} == set(backlog[: kept * BATCH]) | {late}
