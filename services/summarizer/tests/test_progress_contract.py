"""The progress port's contract, held alike by the tests' fake and by the adapter that puts
progress on the log, read as the queue status reads it: the greatest of each position
(``mnemo_schema.progress.sessions_of``, which the entity projection keeps; its own test checks
it against that rule)."""

from __future__ import annotations

import uuid

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_schema.progress import sessions_of
from mnemo_summarizer.adapters.progress import LogProgress, hand_over

from .conftest import Log, Progress

Key = tuple[str, str]


class FakeSide:
    def __init__(self) -> None:
        self.progress = Progress()

    def session(self, key: Key) -> tuple[int, int]:
        return self.progress.sessions.get(key, (0, 0))


class LogSide:
    def __init__(self) -> None:
        self.log = Log()
        self.progress = LogProgress(self.log)

    def session(self, key: Key) -> tuple[int, int]:
        return sessions_of(self.log.events).get(key, (0, 0))


@pytest.fixture(params=["fake", "log"])
def side(request: pytest.FixtureRequest) -> FakeSide | LogSide:
    return FakeSide() if request.param == "fake" else LogSide()


async def test_a_session_shows_what_is_counted_and_never_moves_back(
    side: FakeSide | LogSide,
) -> None:
    ws = f"ws-{uuid.uuid4().hex[:8]}"
    one, two = (ws, "s1"), (ws, "s2")
    assert side.session(one) == (0, 0)
    await side.progress.done({one: (4, 0), two: (6, 5)})
    assert (side.session(one), side.session(two)) == ((4, 0), (6, 5))
    await side.progress.done({one: (9, 7)})
    # Counted again from an older position (a redelivery): nothing moves back.
    await side.progress.done({one: (5, 0), two: (3, 0)})
    assert (side.session(one), side.session(two)) == ((9, 7), (6, 5))


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
    side = LogSide()
    assert await hand_over(pg_pool, side.log) >= 1
    assert side.session(key) == (21, 19)
    before = len(side.log.events)
    assert await hand_over(pg_pool, side.log) == 0
    assert len(side.log.events) == before
