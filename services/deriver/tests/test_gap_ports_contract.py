"""The contracts of the gap ports (``GapRecords``, ``Reread``), held alike by the tests' fakes and
by the adapters on Postgres and JetStream."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, Protocol

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_deriver.adapters.gaps import PgGapRecords
from mnemo_deriver.adapters.reread import LogReread
from mnemo_deriver.ports import GapRecords
from mnemo_deriver.ports import Reread as RereadPort
from mnemo_runtime.bus import EventPublisher, connect, ensure_stream
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted

from .conftest import MemoryLog, Records, Reread


def _message(workspace: str, i: int, session: str = "s") -> MessagePosted:
    return MessagePosted(
        workspace=workspace,
        session_id=session,
        message_id=f"m{i}",
        peer_id="ann",
        content=f"message {i}",
        metadata={},
        created_at=datetime.now(UTC),
        token_count=3,
    )


# --- GapRecords ---------------------------------------------------------------------------


@pytest.fixture(params=["fake", "postgres"])
def records(request: pytest.FixtureRequest) -> GapRecords:
    if request.param == "fake":
        return Records()
    pool: AsyncConnectionPool = request.getfixturevalue("pg_pool")
    return PgGapRecords(pool)


@pytest.mark.integration
async def test_records_are_kept_moved_and_dropped_per_partition(records: GapRecords) -> None:
    a, b, c = (f"ws-{uuid.uuid4().hex[:8]}" for _ in range(3))
    await records.keep(a, 7, 10)
    await records.keep(b, 7, 20)
    await records.keep(c, 8, 30)
    assert {w: p for w, p in (await records.load(7)).items() if w in (a, b, c)} == {a: 10, b: 20}
    await records.keep(a, 7, 15)  # moved on
    await records.drop(b)
    await records.drop(b)  # dropping twice is no error
    assert {w: p for w, p in (await records.load(7)).items() if w in (a, b, c)} == {a: 15}
    assert {w: p for w, p in (await records.load(8)).items() if w in (a, b, c)} == {c: 30}


# --- Reread -------------------------------------------------------------------------------


class Side(Protocol):
    reread: RereadPort

    async def post(self, event: MessagePosted) -> int: ...

    async def erase(self, workspace: str) -> None: ...


class FakeSide:
    def __init__(self) -> None:
        self.log = MemoryLog()
        self.reread = Reread(self.log)

    async def post(self, event: MessagePosted) -> int:
        return self.log.append(event)

    async def erase(self, workspace: str) -> None:
        self.log.erase(workspace)


class BusSide:
    def __init__(self, nc: Any, partitions: int) -> None:
        self._nc = nc
        self._js = nc.jetstream(timeout=10)
        self._partitions = partitions
        self._publisher = EventPublisher(self._js)
        self.reread = LogReread(nc, self._js)

    async def post(self, event: MessagePosted) -> int:
        return (await self._publisher.publish([event]))[0]

    async def erase(self, workspace: str) -> None:
        await self._js.purge_stream(
            subjects.STREAM,
            subject=subjects.of_workspace(subjects.message_filter(), workspace),
        )


@pytest.fixture(params=["fake", "jetstream"])
async def side(request: pytest.FixtureRequest) -> AsyncIterator[Side]:
    if request.param == "fake":
        yield FakeSide()
        return
    url: str = request.getfixturevalue("js_url")
    nc = await connect(url, "reread-contract")
    partitions = await ensure_stream(nc.jetstream(timeout=10))
    bus = BusSide(nc, partitions)
    try:
        yield bus
    finally:
        await nc.close()


class Taken:
    """A sink: what it was handed, stopping after ``stop_after`` messages if given."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.seqs: list[int] = []
        self.stop_after = stop_after
        self.changed = asyncio.Event()

    async def __call__(self, items: list[tuple[int, MessagePosted]]) -> bool:
        self.seqs += [s for s, _ in items]
        self.changed.set()
        return self.stop_after is None or len(self.seqs) < self.stop_after

    async def count(self, n: int, timeout: float = 10.0) -> None:
        async def reached() -> None:
            while len(self.seqs) < n:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(reached(), timeout)


async def _partition(side: Side, workspace: str) -> int:
    if isinstance(side, BusSide):
        return subjects.partition_of(workspace, side._partitions)
    return 0


@pytest.mark.integration
async def test_a_reread_delivers_its_workspace_in_order_from_a_position_and_follows(
    side: Side,
) -> None:
    ws, other = f"ws-{uuid.uuid4().hex[:8]}", f"ws-{uuid.uuid4().hex[:8]}"
    seqs = []
    for i in range(6):
        seqs.append(await side.post(_message(ws, i)))
        await side.post(_message(other, i))
    taken = Taken()
    await side.reread.start(await _partition(side, ws), ws, seqs[2], taken)
    await taken.count(4)
    assert taken.seqs == seqs[2:]
    # Later messages of the workspace follow; nothing was left before them.
    later = await side.post(_message(ws, 9))
    await taken.count(5)
    assert taken.seqs == [*seqs[2:], later]
    await side.reread.stop(ws)
    await side.reread.stop(ws)  # stopping twice is no error


@pytest.mark.integration
async def test_a_sink_that_says_stop_is_handed_nothing_more(side: Side) -> None:
    ws = f"ws-{uuid.uuid4().hex[:8]}"
    seqs = [await side.post(_message(ws, i)) for i in range(5)]
    taken = Taken(stop_after=2)
    await side.reread.start(await _partition(side, ws), ws, seqs[0], taken)
    await taken.count(2)
    await side.post(_message(ws, 7))
    await asyncio.sleep(0.3)  # what would have come meanwhile (none may)
    assert taken.seqs == seqs[:2]
    await side.reread.stop(ws)


@pytest.mark.integration
async def test_the_log_says_whether_a_workspace_has_messages_from_a_position(side: Side) -> None:
    ws, other = f"ws-{uuid.uuid4().hex[:8]}", f"ws-{uuid.uuid4().hex[:8]}"
    partition = await _partition(side, ws)
    seqs = [await side.post(_message(ws, i)) for i in range(3)]
    after = await side.post(_message(other, 0))  # another workspace's message is none of its
    assert await side.reread.any_from(partition, ws, seqs[0])
    assert await side.reread.any_from(partition, ws, seqs[2])
    assert not await side.reread.any_from(partition, ws, seqs[2] + 1)
    assert not await side.reread.any_from(partition, ws, after)
    await side.erase(ws)  # erased: nothing of it is left to read
    assert not await side.reread.any_from(partition, ws, seqs[0])
