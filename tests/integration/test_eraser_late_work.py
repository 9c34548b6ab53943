"""Work in flight when an erasure runs: an observation citing an erased message, landing after
the erasure (in a later step of the eraser or the same one), goes too (its event erased from the
stream, its retraction published), while an observation of a workspace with nothing erased is
left alone; so do the progress and the dreams of an erased peer (real JetStream and Postgres)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from mnemo_projector.doorbell import Doorbell
from mnemo_projector.eraser import FOLLOWED_KINDS, Eraser
from mnemo_runtime.infra import open_infra
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects
from mnemo_schema.events import (
    Event,
    MessageDeleted,
    MessagePosted,
    PeerCreated,
    PeerDeleted,
    decode_event,
    encode_event,
)
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationsErased,
    ObservationWritten,
)
from mnemo_schema.progress import DerivationProgressed

from .conftest import neighbour
from .late_events import NOW, message, observation


async def test_late_work_on_an_erased_message_goes_and_other_work_stays(
    own_nats: str, fresh_database: str
) -> None:
    infra = await open_infra(own_nats, fresh_database, "eraser-test")
    erased_ws = "late-a"
    # A workspace of the same partition, so one step of one eraser sees both.
    other_ws = neighbour(erased_ws, infra.partitions)
    partition = subjects.partition_of(erased_ws, infra.partitions)
    eraser = Eraser(infra.nc, infra.js, infra.pool, partition=partition)
    await eraser.setup()

    async def publish(*events: Event) -> list[int]:
        return [(await infra.js.publish(e.subject(), encode_event(e))).seq for e in events]

    async def stored_observations() -> dict[str, int]:
        found = await read_stored(infra.js, subjects.STREAM, subjects.observation_filter(partition))
        out = {}
        for s in found:
            e = decode_event(s.data)
            if isinstance(e, ObservationWritten):
                out[e.observation_id] = s.seq
        return out

    try:
        await publish(message(erased_ws, "m1"), message(other_ws, "m1"))
        await publish(MessageDeleted(workspace=erased_ws, session_id="s", message_id="m1"))
        await eraser.step()
        # Derivations of m1 in both workspaces land after the erasure, in one step.
        await publish(observation(erased_ws, "o-late", "m1"), observation(other_ws, "o-kept", "m1"))
        await eraser.step()

        assert set(await stored_observations()) == {"o-kept"}
        retractions = [
            decode_event(s.data)
            for s in await read_stored(
                infra.js, subjects.STREAM, subjects.observation_filter(partition)
            )
        ]
        erased = [e for e in retractions if isinstance(e, ObservationsErased)]
        assert [(e.workspace, e.observation_ids) for e in erased] == [(erased_ws, ["o-late"])]
        # The next step reads the retraction it published (nothing to do), then none is left.
        assert await eraser.step() == 1
        assert await eraser.step() == 0

        # An erasure and late work on it in one step: the erasure marks its workspace at once.
        await publish(
            MessageDeleted(workspace=other_ws, session_id="s", message_id="m1"),
            observation(other_ws, "o-later", "m1"),
        )
        await eraser.step()
        assert set(await stored_observations()) == set()
    finally:
        await infra.close()


async def test_an_idle_eraser_is_woken_by_a_deletion(own_nats: str, fresh_database: str) -> None:
    # Its longest idle wait is far beyond the test's patience: only the doorbell (a core NATS
    # subscription on the subjects it follows) can make it act in time.
    infra = await open_infra(own_nats, fresh_database, "eraser-doorbell")
    ws = "rung"
    partition = subjects.partition_of(ws, infra.partitions)
    doorbell = Doorbell(infra.nc, infra.partitions, FOLLOWED_KINDS)
    eraser = Eraser(
        infra.nc, infra.js, infra.pool, partition=partition, idle_s=600, doorbell=doorbell
    )
    await eraser.setup()
    said = message(ws, "m1")
    posted = (await infra.js.publish(said.subject(), encode_event(said))).seq
    stop = asyncio.Event()
    running = asyncio.create_task(eraser.run(stop))

    async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
        deadline = time.monotonic() + 20
        while not await check():
            assert time.monotonic() < deadline, what
            await asyncio.sleep(0.05)

    async def idle() -> bool:
        return eraser.applied >= posted

    try:
        await eventually(idle, "the eraser did not read to the end of the log")
        deleted = MessageDeleted(workspace=ws, session_id="s", message_id="m1")
        at = (await infra.js.publish(deleted.subject(), encode_event(deleted))).seq

        async def carried_out() -> bool:
            return eraser.applied >= at

        await eventually(carried_out, "the deletion was not carried out")
        async with infra.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM erasures WHERE workspace = %s", (ws,)
            )
            assert await cur.fetchone() == {"n": 1}
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
        await infra.close()


async def test_late_progress_of_an_erased_peer_goes_unless_the_peer_is_made_again(
    own_nats: str, fresh_database: str
) -> None:
    infra = await open_infra(own_nats, fresh_database, "eraser-test")
    ws = "late-progress"
    partition = subjects.partition_of(ws, infra.partitions)
    eraser = Eraser(infra.nc, infra.js, infra.pool, partition=partition)
    await eraser.setup()

    async def publish(*events: Event) -> list[int]:
        return [(await infra.js.publish(e.subject(), encode_event(e))).seq for e in events]

    async def progress() -> list[tuple[str, str, int]]:
        found = await read_stored(infra.js, subjects.STREAM, subjects.work_filter(partition))
        out = []
        for s in found:
            e = decode_event(s.data)
            assert isinstance(e, DerivationProgressed)
            out.append((e.observer, e.observed, e.done_seq))
        return out

    def line(observer: str, observed: str, done: int) -> DerivationProgressed:
        return DerivationProgressed(
            workspace=ws, observer=observer, observed=observed, taken_seq=done, done_seq=done
        )

    try:
        await publish(
            PeerCreated(workspace=ws, peer_id="ann", metadata={}),
            PeerCreated(workspace=ws, peer_id="ben", metadata={}),
            message(ws, "m1"),
            line("ann", "ann", 3),
            line("ben", "ben", 3),
        )
        await publish(PeerDeleted(workspace=ws, peer_id="ann"))
        await eraser.step()
        assert await progress() == [("ben", "ben", 3)]
        # The deriver was still at work on ann's line: its progress lands after the erasure,
        # and goes; ben's stays.
        await publish(line("ann", "ann", 4), line("ben", "ben", 4))
        await eraser.step()
        assert await progress() == [("ben", "ben", 3), ("ben", "ben", 4)]
        # A new peer of the same name: its progress is its own, and stays.
        await publish(PeerCreated(workspace=ws, peer_id="ann", metadata={}), line("ann", "ann", 9))
        await eraser.step()
        assert await progress() == [("ben", "ben", 3), ("ben", "ben", 4), ("ann", "ann", 9)]
    finally:
        await infra.close()


async def test_a_late_observation_by_an_erased_peer_goes_though_it_cites_another_peersmessage(
    own_nats: str, fresh_database: str
) -> None:
    infra = await open_infra(own_nats, fresh_database, "eraser-test")
    ws = "late-observer"
    partition = subjects.partition_of(ws, infra.partitions)
    eraser = Eraser(infra.nc, infra.js, infra.pool, partition=partition)
    await eraser.setup()

    async def publish(*events: Event) -> None:
        for e in events:
            await infra.js.publish(e.subject(), encode_event(e))

    def seen(oid: str, observer: str) -> ObservationWritten:
        # What ``observer`` concluded about ben from his message m-ben (which nobody erased).
        return ObservationWritten(
            workspace=ws,
            observation_id=oid,
            observer=observer,
            observed="ben",
            session_id="s",
            level="explicit",
            content="Ben is a nurse.",
            source_message_ids=["m-ben"],
            source_message_seqs=[3],
            observed_at=NOW,
            origin="deriver",
        )

    async def logged() -> tuple[list[str], list[ObservationsErased]]:
        found = await read_stored(infra.js, subjects.STREAM, subjects.observation_filter(partition))
        events = [decode_event(s.data) for s in found]
        kept = [e.observation_id for e in events if isinstance(e, ObservationWritten)]
        return kept, [e for e in events if isinstance(e, ObservationsErased)]

    try:
        ben_said = MessagePosted(
            workspace=ws,
            session_id="s",
            message_id="m-ben",
            peer_id="ben",
            content="I am a nurse.",
            metadata={},
            created_at=NOW,
            token_count=4,
        )
        await publish(
            PeerCreated(workspace=ws, peer_id="ann", metadata={}),
            PeerCreated(workspace=ws, peer_id="ben", metadata={}),
            ben_said,
            message(ws, "m-ann"),
            PeerDeleted(workspace=ws, peer_id="ann"),
        )
        await eraser.step()
        # The deriver was still at work on ann's view of ben, on ann's own (citing her erased
        # message) and on ben's own; the dreamer dropped one of ann's beliefs, saying why.
        dropped = ObservationDeleted(
            workspace=ws,
            observation_id="o-old",
            observer="ann",
            observed="ben",
            reason="Superseded: Ben is a nurse.",
        )
        own = observation(ws, "o-ann-own", "m-ann")
        await publish(seen("o-ann", "ann"), own, seen("o-ben", "ben"), dropped)
        await eraser.step()
        kept, retracted = await logged()
        assert kept == ["o-ben"]
        found = await read_stored(infra.js, subjects.STREAM, subjects.observation_filter(partition))
        assert not any(isinstance(decode_event(s.data), ObservationDeleted) for s in found)
        # Both of ann's retractions say her representations went whole (the dreamer's
        # schedule forgets them, though it may have counted the observations meanwhile).
        assert [(e.observer, e.observation_ids, e.whole) for e in retracted] == [
            ("ann", ["o-ann"], True),
            ("ann", ["o-ann-own"], True),
        ]
    finally:
        await infra.close()
