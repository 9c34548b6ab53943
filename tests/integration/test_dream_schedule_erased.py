"""A representation erased with its peer leaves the dreamer's schedule (real JetStream and
Postgres): its ids are kept no longer, and no dream of it falls due. One erased in part (a
message's observations) keeps its schedule, and a representation's observations after its
erasure in the log are counted anew."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo_dreamer.adapters.bus import consume_observations
from mnemo_dreamer.adapters.memory import PgMemory
from mnemo_dreamer.adapters.schedule import PgSchedule
from mnemo_dreamer.service import Dreamer
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.infra import open_infra
from mnemo_runtime.retrieval import RetrievalClient
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


async def test_a_representation_erased_whole_leaves_the_schedule(
    own_nats: str, fresh_database: str
) -> None:
    infra = await open_infra(own_nats, fresh_database, "dreamer-test")
    settings = DreamerSettings(min_new_observations=3)
    schedule = PgSchedule(infra.pool, settings)
    dreamer = Dreamer(
        settings,
        {},
        PgMemory(infra.pool, RetrievalClient(infra.nc, None), infra.partitions),
        EventPublisher(infra.js),
        schedule,
    )
    dead = DeadLetters(infra.js, infra.pool, "dreamer")
    await dead.ensure()
    stop = asyncio.Event()

    async def publish(*events: Event) -> int:
        seq = 0
        for e in events:
            seq = (await infra.js.publish(e.subject(), encode_event(e))).seq
        return seq

    async def rows() -> dict[str, int]:
        async with infra.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT observer, explicit_count, applied_seq FROM dream_schedule"
                " WHERE workspace = %s",
                (WS,),
            )
            found: list[Any] = await cur.fetchall()
        return {r["observer"]: r["explicit_count"] for r in found}

    async def counted_through(seq: int) -> dict[str, int]:
        # The consumer acknowledges in log order: once the last event is acknowledged, every
        # earlier one was handled.
        deadline = time.monotonic() + 20
        while True:
            info = await infra.js.consumer_info(subjects.STREAM, DREAM_SCHEDULER_DURABLE)
            if info.ack_floor.stream_seq >= seq:
                return await rows()
            assert time.monotonic() < deadline, "the schedule's consumer did not get there"
            await asyncio.sleep(0.05)

    running = asyncio.create_task(consume_observations(infra.js, dreamer, stop, dead))
    try:
        last = await publish(*(_explicit(n, p) for n in (1, 2, 3) for p in ("ann", "ben")))
        assert await counted_through(last) == {"ann": 3, "ben": 3}
        # Ben loses a message's observation: his representation stays, and so does its count.
        last = await publish(_erased("ben", whole=False))
        assert await counted_through(last) == {"ann": 3, "ben": 3}
        # Ann is erased: her schedule goes, ids and all.
        last = await publish(_erased("ann", whole=True))
        assert await counted_through(last) == {"ben": 3}
        tomorrow = datetime.now(UTC) + timedelta(days=1)
        assert [s.observer for s in await schedule.ready(tomorrow)] == ["ben"]
        # A new ann, in one batch with an observation of the old one before her erasure: only
        # what follows the erasure counts.
        last = await publish(_explicit(9, "ann"), _erased("ann", whole=True), _explicit(10, "ann"))
        assert await counted_through(last) == {"ann": 1, "ben": 3}
    finally:
        stop.set()
        await asyncio.wait_for(running, 20)
        await infra.close()
