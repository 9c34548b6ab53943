"""A representation erased with its peer leaves the dreamer's schedule (real JetStream and
Postgres): its ids are kept no longer, and no dream of it falls due. One erased in part (a
message's observations) keeps its schedule, and a representation's observations after its
erasure in the log are counted anew. A count that fails is tried again before anything after
it in the log: an observation of a representation erased meanwhile does not bring its schedule
back, and one whose count keeps failing is parked without holding up the others."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from nats.js.errors import NotFoundError

from mnemo_dreamer.adapters.bus import consume_observations
from mnemo_dreamer.adapters.memory import PgMemory
from mnemo_dreamer.adapters.schedule import PgSchedule
from mnemo_dreamer.service import Dreamer
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters, Letter
from mnemo_runtime.infra import Infra, open_infra
from mnemo_runtime.retrieval import RetrievalClient
from mnemo_runtime.vectors.ports import Scope
from mnemo_schema import subjects
from mnemo_schema.dreams import DREAM_SCHEDULER_DURABLE
from mnemo_schema.events import Event, encode_event
from mnemo_schema.observations import ObservationsErased, ObservationWritten

WS = "dream-erased"


def _explicit(n: int, peer: str) -> ObservationWritten:
    return ObservationWritten(
        workspace=WS,
        observation_id=f"o-{peer}-{n}",
        observer=peer,
        observed=peer,
        content=f"{peer} said thing {n}",
        source_message_ids=[f"m{n}"],
        source_span="thing",
    )


def _erased(peer: str, *, whole: bool) -> ObservationsErased:
    return ObservationsErased(
        workspace=WS, observer=peer, observed=peer, observation_ids=[f"o-{peer}-1"], whole=whole
    )


@dataclass
class Running:
    """The schedule's consumer running on real JetStream and Postgres, and how to drive it."""

    infra: Infra
    schedule: PgSchedule

    async def publish(self, *events: Event) -> int:
        seq = 0
        for e in events:
            seq = (await self.infra.js.publish(e.subject(), encode_event(e))).seq
        return seq

    async def rows(self) -> dict[str, int]:
        async with self.infra.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT observer, explicit_count FROM dream_schedule WHERE workspace = %s", (WS,)
            )
            found: list[Any] = await cur.fetchall()
        return {r["observer"]: r["explicit_count"] for r in found}

    async def counted_through(self, seq: int) -> dict[str, int]:
        # The consumer acknowledges in log order: once the last event is acknowledged, every
        # earlier one was handled.
        deadline = time.monotonic() + 20
        while True:
            try:
                info = await self.infra.js.consumer_info(subjects.STREAM, DREAM_SCHEDULER_DURABLE)
            except NotFoundError:
                info = None  # the consumer's task has not created its durable yet
            if info is not None and info.ack_floor.stream_seq >= seq and not info.num_ack_pending:
                return await self.rows()
            assert time.monotonic() < deadline, "the schedule's consumer did not get there"
            await asyncio.sleep(0.05)

    async def parked(self) -> list[str]:
        async with self.infra.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT reason FROM dead_letters WHERE stage = 'dreamer' ORDER BY id"
            )
            return [r["reason"] for r in await cur.fetchall()]  # type: ignore[call-overload]


class DeadLettersAway(DeadLetters):
    """Dead letters whose first ``times`` parkings find Postgres away."""

    times = 0

    async def park(self, letter: Letter) -> int:
        if self.times > 0:
            self.times -= 1
            raise psycopg.OperationalError("server closed")
        return await super().park(letter)


@asynccontextmanager
async def running(
    nats_url: str,
    database_url: str,
    settings: DreamerSettings,
    wrap: Any = None,
    dead_away: int = 0,
) -> AsyncIterator[Running]:
    """The schedule's consumer over ``PgSchedule`` (seen through ``wrap``, if given)."""
    infra = await open_infra(nats_url, database_url, "dreamer-test")
    schedule = PgSchedule(infra.pool, settings)
    dreamer = Dreamer(
        settings,
        {},
        PgMemory(infra.pool, RetrievalClient(infra.nc, None), infra.partitions),
        EventPublisher(infra.js),
        wrap(schedule) if wrap is not None else schedule,
    )
    dead = DeadLettersAway(infra.js, infra.pool, "dreamer")
    dead.times = dead_away
    await dead.ensure()
    stop = asyncio.Event()
    task = asyncio.create_task(consume_observations(infra.js, dreamer, stop, dead))
    try:
        yield Running(infra, schedule)
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)
        await infra.close()


class Failing:
    """The schedule store, failing ``times`` times with ``error`` to count ``peer``'s
    observations (the store is the consumer's port: the failure stands for Postgres away, or a
    count its work cannot make)."""

    def __init__(self, inner: PgSchedule, peer: str, error: Exception, times: int) -> None:
        self._inner = inner
        self._peer = peer
        self._error = error
        self.left = times
        self.failed = asyncio.Event()

    async def count_explicit(self, scope: Scope, seqs: Sequence[int], now: datetime) -> Any:
        if scope.observer == self._peer and self.left > 0:
            self.left -= 1
            self.failed.set()
            raise self._error
        return await self._inner.count_explicit(scope, seqs, now)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_a_representation_erased_whole_leaves_the_schedule(
    own_nats: str, fresh_database: str
) -> None:
    async with running(own_nats, fresh_database, DreamerSettings(min_new_observations=3)) as r:
        last = await r.publish(*(_explicit(n, p) for n in (1, 2, 3) for p in ("ann", "ben")))
        assert await r.counted_through(last) == {"ann": 3, "ben": 3}
        # Ben loses a message's observation: his representation stays, and so does its count.
        last = await r.publish(_erased("ben", whole=False))
        assert await r.counted_through(last) == {"ann": 3, "ben": 3}
        # Ann is erased: her schedule goes, ids and all.
        last = await r.publish(_erased("ann", whole=True))
        assert await r.counted_through(last) == {"ben": 3}
        tomorrow = datetime.now(UTC) + timedelta(days=1)
        assert [s.observer for s in await r.schedule.ready(tomorrow)] == ["ben"]
        # A new ann, in one batch with an observation of the old one before her erasure: only
        # what follows the erasure counts.
        last = await r.publish(
            _explicit(9, "ann"), _erased("ann", whole=True), _explicit(10, "ann")
        )
        assert await r.counted_through(last) == {"ann": 1, "ben": 3}


async def test_a_count_that_failed_comes_before_a_later_erasure(
    own_nats: str, fresh_database: str
) -> None:
    """Postgres fails ann's count; her erasure is logged while the count waits. The count is
    made first, then the erasure takes it: no observation of hers comes back afterwards to make
    her schedule again (handed back to the bus for later, it would, 30 s on)."""
    flaky: list[Failing] = []

    def wrap(inner: PgSchedule) -> Failing:
        flaky.append(Failing(inner, "ann", psycopg.OperationalError("server closed"), times=2))
        return flaky[0]

    settings = DreamerSettings(min_new_observations=3)
    async with running(own_nats, fresh_database, settings, wrap) as r:
        await r.publish(_explicit(1, "ann"), _explicit(1, "ben"))
        await asyncio.wait_for(flaky[0].failed.wait(), 20)
        last = await r.publish(_erased("ann", whole=True))
        assert await r.counted_through(last) == {"ben": 1}
        assert flaky[0].left == 0, "the count was not tried again"
        # Everything was acknowledged once: nothing is waiting to be delivered again.
        info = await r.infra.js.consumer_info(subjects.STREAM, DREAM_SCHEDULER_DURABLE)
        assert info.num_redelivered == 0 and info.num_pending == 0
        assert await r.rows() == {"ben": 1}
        assert await r.parked() == []


async def test_a_count_that_keeps_failing_is_parked_and_the_rest_go_on(
    own_nats: str, fresh_database: str
) -> None:
    def wrap(inner: PgSchedule) -> Failing:
        return Failing(inner, "ann", ValueError("no such count"), times=100)

    settings = DreamerSettings(min_new_observations=3, max_attempts=2)
    # Postgres is away the first time the count is parked: it is parked when it is back.
    async with running(own_nats, fresh_database, settings, wrap, dead_away=1) as r:
        last = await r.publish(_explicit(1, "ann"), _explicit(1, "ben"), _explicit(2, "ben"))
        assert await r.counted_through(last) == {"ben": 2}
        parked = await r.parked()
        assert len(parked) == 1 and "no such count" in parked[0]
