"""A dream of an erased peer in flight when the erasure runs: its late events and card go, and
the memory projection, which may have applied them, is told to drop them (real JetStream and
Postgres)."""

from __future__ import annotations

from mnemo_projector.eraser import Eraser
from mnemo_projector.memory import MemoryProjection
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.infra import open_infra
from mnemo_runtime.streams import read_stored
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema import subjects
from mnemo_schema.dreams import DreamCompleted, DreamDue, DreamsErased
from mnemo_schema.events import (
    Event,
    PeerCreated,
    PeerDeleted,
    decode_event,
    encode_event,
)
from mnemo_schema.observations import ObservationsErased, PeerCardUpdated

from .late_events import NOW, observation
from .retrieval_worlds import Logged


async def test_a_dream_of_an_erased_peer_landing_late_goes_with_its_card_and_leaves_no_unit(
    own_nats: str, fresh_database: str
) -> None:
    infra = await open_infra(own_nats, fresh_database, "eraser-test")
    ws = "late-dream"
    partition = subjects.partition_of(ws, infra.partitions)
    eraser = Eraser(infra.nc, infra.js, infra.pool, partition=partition)
    await eraser.setup()
    memory = MemoryProjection(build_embedder("fake"), PgVectorIndex(infra.pool), cited=Logged([]))
    async with infra.pool.connection() as conn:
        await memory.setup(conn)

    async def publish(*events: Event) -> list[int]:
        return [(await infra.js.publish(e.subject(), encode_event(e))).seq for e in events]

    async def dream_log() -> list[tuple[int, Event]]:
        found = await read_stored(infra.js, subjects.STREAM, subjects.dream_filter(partition))
        return [(s.seq, decode_event(s.data)) for s in found]

    def due(peer: str) -> DreamDue:
        return DreamDue(
            workspace=ws,
            observer=peer,
            observed=peer,
            reason="requested",
            due_at=NOW,
            session_id="s",
        )

    async def units() -> list[tuple[str, str, bool]]:
        async with infra.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT observer, due_event_id, completed_seq IS NOT NULL AS done FROM dreams"
                " WHERE workspace = %s ORDER BY due_seq",
                (ws,),
            )
            return [(r["observer"], r["due_event_id"], r["done"]) for r in await cur.fetchall()]

    def card(peer: str) -> PeerCardUpdated:
        return PeerCardUpdated(
            workspace=ws,
            observer=peer,
            observed=peer,
            card=[f"{peer} is a nurse"],
            origin="dreamer",
        )

    async def cards() -> list[str]:
        async with infra.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT observer FROM peer_cards WHERE workspace = %s ORDER BY 1", (ws,)
            )
            return [r["observer"] for r in await cur.fetchall()]

    async def texts() -> list[PeerCardUpdated]:
        found = await read_stored(infra.js, subjects.STREAM, subjects.observation_filter(partition))
        return [e for s in found if isinstance(e := decode_event(s.data), PeerCardUpdated)]

    try:
        await publish(
            PeerCreated(workspace=ws, peer_id="ann", metadata={}),
            PeerCreated(workspace=ws, peer_id="ben", metadata={}),
            observation(ws, "o-ann", "m1"),
            PeerDeleted(workspace=ws, peer_id="ann"),
        )
        await eraser.step()
        # Her representation went whole (the dreamer's schedule forgets it too).
        found = await read_stored(infra.js, subjects.STREAM, subjects.observation_filter(partition))
        [whole] = [e for s in found if isinstance(e := decode_event(s.data), ObservationsErased)]
        assert (whole.observer, whole.observation_ids, whole.whole) == ("ann", ["o-ann"], True)
        # Ann's dream was scheduled while her erasure ran, and the dreamer finished an earlier
        # one of hers after it, drawing her card. Ben's dream and card are his own.
        late, kept = due("ann"), due("ben")
        finished = DreamCompleted(workspace=ws, observer="ann", observed="ann", due_event_id="d0")
        drawn, own = card("ann"), card("ben")
        at = await publish(late, finished, kept, drawn, own)
        # The memory projection had applied ann's late DreamDue and card before the eraser
        # reached them.
        async with infra.pool.connection() as conn, conn.transaction():
            await memory.apply(conn, [(at[0], late), (at[3], drawn), (at[4], own)])
        assert await cards() == ["ann", "ben"]
        await eraser.step()
        assert await texts() == [own]

        logged = await dream_log()
        assert logged[0][1] == kept
        retraction = logged[1][1]
        assert isinstance(retraction, DreamsErased)
        assert retraction.due_event_ids == [late.event_id]
        assert len(logged) == 2  # ann's DreamDue and DreamCompleted are gone from the log
        retracted = await read_stored(
            infra.js, subjects.STREAM, subjects.observation_filter(partition), after=at[-1]
        )
        async with infra.pool.connection() as conn, conn.transaction():
            await memory.apply(conn, [s for s in logged if s[0] > at[0]])
            await memory.apply(conn, [(s.seq, decode_event(s.data)) for s in retracted])
        # Ann's unit goes with the retraction: nothing waits on a dream that will not run.
        assert await units() == [("ben", kept.event_id, False)]
        assert await cards() == ["ben"]
        # The step that reads its own two retractions has nothing more to do.
        assert await eraser.step() == 2
        assert len(await dream_log()) == 2

        # A new peer of the same name dreams, and its dream stays.
        again = due("ann")
        await publish(PeerCreated(workspace=ws, peer_id="ann", metadata={}), again)
        await eraser.step()
        assert [e for _, e in await dream_log()][-1] == again
    finally:
        await infra.close()
