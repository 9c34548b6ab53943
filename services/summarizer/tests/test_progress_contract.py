"""The progress port's contract, held alike by the tests' fake and by the adapter that puts
progress on the log, as the queue status reads it (the entity projection's ``work_sessions``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_projector.entities import EntityProjection
from mnemo_schema.events import Envelope, Event, SessionCreated
from mnemo_summarizer.adapters.progress import LogProgress, hand_over

from .conftest import Progress

Key = tuple[str, str]


class Recorded:
    """The log as the adapter writes to it: events in order, with their positions."""

    def __init__(self) -> None:
        self.events: list[tuple[int, Envelope]] = []

    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        first = len(self.events) + 1
        self.events += list(enumerate(events, start=first))
        return list(range(first, len(self.events) + 1))


class FakeSide:
    def __init__(self) -> None:
        self.progress = Progress()

    async def session(self, key: Key) -> tuple[int, int]:
        return self.progress.sessions.get(key, (0, 0))


class LogSide:
    """``LogProgress`` on a log the entity projection applies to Postgres."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self.log = Recorded()
        self.progress = LogProgress(self.log)
        self.applied = 0

    async def session(self, key: Key) -> tuple[int, int]:
        batch: list[tuple[int, Event]] = [
            (seq, e)  # type: ignore[misc]
            for seq, e in self.log.events[self.applied :]
        ]
        # The sessions first: the projection keeps the progress of existing sessions only.
        named = {(e.workspace, e.session_id) for _, e in batch}  # type: ignore[union-attr]
        made: list[tuple[int, Event]] = [
            (0, SessionCreated(workspace=ws, session_id=sid, metadata={}))
            for ws, sid in sorted(named)
        ]
        async with self.pool.connection() as conn, conn.transaction():
            await EntityProjection().apply(conn, made + batch)
            cur = await conn.execute(
                "SELECT done_seq, summary_seq FROM work_sessions"
                " WHERE workspace = %s AND session_id = %s",
                key,
            )
            row: Any = await cur.fetchone()
        self.applied = len(self.log.events)
        return (0, 0) if row is None else (row["done_seq"], row["summary_seq"])


@pytest.fixture(params=["fake", pytest.param("log", marks=pytest.mark.integration)])
def side(request: pytest.FixtureRequest) -> FakeSide | LogSide:
    if request.param == "fake":
        return FakeSide()
    return LogSide(request.getfixturevalue("pg_pool"))


async def test_a_session_shows_what_is_counted_and_never_moves_back(
    side: FakeSide | LogSide,
) -> None:
    ws = f"ws-{uuid.uuid4().hex[:8]}"
    one, two = (ws, "s1"), (ws, "s2")
    assert await side.session(one) == (0, 0)
    await side.progress.done({one: (4, 0), two: (6, 5)})
    assert (await side.session(one), await side.session(two)) == ((4, 0), (6, 5))
    await side.progress.done({one: (9, 7)})
    # Counted again from an older position (a redelivery): nothing moves back.
    await side.progress.done({one: (5, 0), two: (3, 0)})
    assert (await side.session(one), await side.session(two)) == ((9, 7), (6, 5))


@pytest.mark.integration
async def test_sessions_kept_in_postgres_before_are_handed_over_to_the_log(
    pg_pool: AsyncConnectionPool,
) -> None:
    key = (f"ws-{uuid.uuid4().hex[:8]}", "s")
    async with pg_pool.connection() as conn:
        await conn.execute(
            "INSERT INTO summarizer_sessions (workspace, session_id, done_seq, summary_seq)"
            " VALUES (%s, %s, 21, 19)",
            key,
        )
    side = LogSide(pg_pool)
    assert await hand_over(pg_pool, side.log) >= 1
    assert await side.session(key) == (21, 19)
    before = len(side.log.events)
    assert await hand_over(pg_pool, side.log) == 0
    assert len(side.log.events) == before
