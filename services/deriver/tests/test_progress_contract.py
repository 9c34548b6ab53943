"""The progress port's contract, held alike by the tests' fake and by the adapter that puts
progress on the log, read as the queue status reads it: the greatest of each position
(``mnemo_schema.progress.lines_of``, which the entity projection keeps; its own test checks it
against that rule)."""

from __future__ import annotations

import uuid

import pytest
from psycopg_pool import AsyncConnectionPool

from mnemo_deriver.adapters.progress import LogProgress, hand_over
from mnemo_deriver.batching import RepKey
from mnemo_schema.progress import Line, lines_of

from .conftest import Lines, Log


class FakeSide:
    def __init__(self) -> None:
        self.progress = Lines()

    def line(self, key: RepKey) -> Line:
        p = self.progress
        return (p.taken_at.get(key, 0), p.done_at.get(key, 0), p.observation_at.get(key, 0))


class LogSide:
    def __init__(self) -> None:
        self.log = Log()
        self.progress = LogProgress(self.log)

    def line(self, key: RepKey) -> Line:
        return lines_of(self.log.events).get((key.workspace, key.observer, key.observed), (0, 0, 0))


@pytest.fixture(params=["fake", "log"])
def side(request: pytest.FixtureRequest) -> FakeSide | LogSide:
    return FakeSide() if request.param == "fake" else LogSide()


def _key(observer: str = "a", observed: str = "b") -> RepKey:
    return RepKey(f"ws-{uuid.uuid4().hex[:8]}", observer, observed)


async def test_a_line_shows_what_is_taken_and_what_is_done(side: FakeSide | LogSide) -> None:
    key = _key()
    assert side.line(key) == (0, 0, 0)
    await side.progress.taken(key, 3, ["s"])
    assert side.line(key) == (3, 0, 0)
    await side.progress.done(key, 3, 8, ["s"])
    assert side.line(key) == (3, 3, 8)
    await side.progress.taken(key, 7)
    assert side.line(key) == (7, 3, 8)
    # A batch that wrote nothing keeps the line's newest observation.
    await side.progress.done(key, 7, 0)
    assert side.line(key) == (7, 7, 8)


async def test_a_line_never_moves_back(side: FakeSide | LogSide) -> None:
    key, other = _key(), _key("b", "b")
    await side.progress.done(key, 9, 12)
    # A redelivered older batch, parked or done again, and a late "taken": nothing moves back.
    await side.progress.taken(key, 4)
    await side.progress.done(key, 5, 10)
    assert side.line(key) == (9, 9, 12)
    # Parked without a take (a dead letter): the line is done through it.
    await side.progress.done(other, 2, 0)
    assert side.line(other) == (2, 2, 0)


@pytest.mark.integration
async def test_lines_kept_in_postgres_before_are_handed_over_to_the_log(
    pg_pool: AsyncConnectionPool,
) -> None:
    key = _key()
    async with pg_pool.connection() as conn:
        await conn.execute(
            "INSERT INTO deriver_lines (workspace, observer, observed, taken_seq, done_seq,"
            " observation_seq) VALUES (%s, %s, %s, 11, 10, 14)",
            (key.workspace, key.observer, key.observed),
        )
    side = LogSide()
    assert await hand_over(pg_pool, side.log) >= 1
    assert side.line(key) == (11, 10, 14)
    # Handed over once: the table is empty, and a second start publishes nothing of it.
    before = len(side.log.events)
    assert await hand_over(pg_pool, side.log) == 0
    assert len(side.log.events) == before
