"""The eraser: carries out each deletion in the log, so that nothing of what it erased stays.

One eraser follows each partition of the log (a workspace's events are all in one), under the
partitions' leases like the projections (lease group ``projector-erasure``): the entity subjects
(where every deletion event is published) from its position in ``projection_positions``
(``erasure``, one row per partition). For each deletion it reads back what came before it,
decides what the deletion covers (``erasure.plan``) and then, in this order:

1. records the erasure and the ids of the messages and observations it erases (``erasures``,
   ``erased_ids``), committed before anything is erased, so a run interrupted after erasing
   some events still finds what rests on them when it starts again;
2. publishes ``ObservationsErased`` for each representation that loses observations (the memory
   projection drops their rows, vectors, postings and, where the card was drawn from them, the
   card) and ``SummariesErased`` for each session that loses summaries (the memory projection
   drops them), and states again any survivor that had been folded into an erased duplicate;
3. erases the covered events from the stream, securely (their bytes overwritten) where they
   held content, the erased messages' own events last (a run started again after them finds
   what rests on them from the ids it recorded);
4. deletes the dead letters holding any of them;
5. marks the erasure finished and moves its position past the deletion.

Every step is idempotent (an erased sequence is no error, the events it publishes carry fixed
ids for the bus's duplicate window, and applying them twice changes nothing), so a crash at any
point is repaired by running the deletion again, which is what the restart (or the next holder
of the partition's lease) does. The read models retract the deleted entity themselves when they
apply the deletion event. What the eraser tells the memory projection is in the log, in order,
so ``mnemo rebuild --memory`` replays to the erased state: the erased events are gone, and the
retractions apply to nothing.

Work still in flight when an erasure runs (a derivation or summary of an erased message landing
after it) is erased as it lands: the eraser also follows the observation and summary subjects,
and an event citing an erased message or observation goes the same way. So does a stage's
progress naming an erased peer, session or workspace (the stages' ``work`` subjects), and a
dream's event, a card or an observation naming an erased peer (of a representation of or by
it), unless what it names was made again in between; an observation, a card or a dream that was
due is retracted in the log (``ObservationsErased``, ``DreamsErased``), so that the memory
projection drops it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from pydantic import ValidationError

from mnemo_projector import erasure, late
from mnemo_projector.doorbell import Doorbell, ring_when, wait
from mnemo_projector.late_work import LateWork
from mnemo_projector.positions import ensure_position, read_position
from mnemo_runtime import direct
from mnemo_runtime.bus import MSG_ID_HEADER, EventPublisher
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool
from mnemo_runtime.streams import Stored, erase, read_stored
from mnemo_schema import subjects
from mnemo_schema.events import (
    MessageDeleted,
    PeerDeleted,
    SessionDeleted,
    WorkspaceDeleted,
    decode_event,
)
from mnemo_schema.observations import ObservationsErased
from mnemo_schema.summaries import SummariesErased

log = get_logger("mnemo.projector.eraser")

ERASURE = "erasure"
# With nothing new, the eraser waits for an event on the subjects it follows (a core NATS
# subscription rings it) or this long at most: a ring missed, as across a reconnection, delays
# an erasure by no more. Polling every step instead cost an idle stack about 0.06 of a core.
IDLE_LOOK_S = 5.0
# The position moves after this many events of a step (and at its end): a restart redoes at
# most these, each idempotently, instead of a position write for every event.
ADVANCE_EVERY = 256


# The kinds of event the eraser follows: deletions (entity subjects) and late work
# (observations, summaries, dreams, the stages' progress).
FOLLOWED_KINDS = ("ent", "obs", "sum", "dream", "work")


def followed(partition: int) -> list[str]:
    """What the eraser of ``partition`` follows, as stored."""
    return [
        subjects.entity_filter("*", partition),
        subjects.observation_filter(partition),
        subjects.summary_filter(partition),
        subjects.dream_filter(partition),
        subjects.work_filter(partition),
    ]


class Eraser:
    """Carries out the deletions of one partition in the log and the projections that do not
    see them directly."""

    name = ERASURE

    def __init__(
        self,
        nc: NATS,
        js: JetStreamContext,
        pool: Pool,
        partition: int = 0,
        poll_s: float = 0.2,
        idle_s: float = IDLE_LOOK_S,
        doorbell: Doorbell | None = None,
    ) -> None:
        self._nc = nc
        self._js = js
        self._pool = pool
        self.partition = partition
        self._poll = poll_s
        self._idle = idle_s
        self._doorbell = doorbell
        self._publisher = EventPublisher(js)
        self._late = LateWork(nc, js, pool, self._publisher, self._remember)
        self.applied = 0

    async def setup(self) -> None:
        """The partition's position row (at the start of the log if new)."""
        async with self._pool.connection() as conn:
            await ensure_position(conn, ERASURE, self.partition)

    async def run(self, stop: asyncio.Event) -> None:
        """Follow the log until ``stop`` is set: a step every ``poll_s`` while events come;
        with none, the next when the doorbell rings (or after ``idle_s``), or every ``poll_s``
        without one."""
        wake = await self._doorbell.bell(self.partition) if self._doorbell else None
        relay = asyncio.create_task(ring_when(stop, wake)) if wake is not None else None
        try:
            while not stop.is_set():
                if wake is not None:
                    wake.clear()
                try:
                    found = await self.step()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("eraser.failed")
                    await asyncio.sleep(0.5)
                    continue
                if found or wake is None:
                    await wait(stop, self._poll)
                else:
                    await wait(wake, self._idle)
        finally:
            if relay is not None:
                relay.cancel()

    async def step(self) -> int:
        """Handle what arrived since the position; how many events were read."""
        async with self._pool.connection() as conn:
            position = await read_position(conn, ERASURE, self.partition)
        last = (await self._js.stream_info(subjects.STREAM)).state.last_seq
        if last <= position:
            self.applied = position
            return 0
        # One direct read per subject says whether it holds anything new: most steps of most
        # partitions find nothing, and need no consumer.
        found = [
            f
            for f in followed(self.partition)
            if await direct.next_from(self._nc, f, position + 1) is not None
        ]
        stored = sorted(
            {
                s.seq: s
                for f in found
                for s in await read_stored(self._js, subjects.STREAM, f, after=position)
            }.values(),
            key=lambda s: s.seq,
        )
        gone: set[int] = set()
        # Late work can only rest on what a workspace with recorded erasures lost: one read
        # for the whole step, not one for each observation (an erasure the step carries out
        # marks its workspace as it goes).
        marked, recorded = await self._late.marks(
            {w for s in stored if (w := subjects.workspace_of_subject(s.subject)) is not None}
        )
        for n, s in enumerate(stored, 1):
            if s.seq not in gone:
                gone |= await self._one(s, marked, recorded)
            if n % ADVANCE_EVERY == 0:
                await self._advance(s.seq)
        await self._advance(int(last))
        return len(stored)

    async def _advance(self, seq: int) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE projection_positions SET seq = %s WHERE name = %s AND partition = %s"
                " AND seq < %s",
                (seq, ERASURE, self.partition, seq),
            )
        self.applied = max(self.applied, seq)

    async def _one(self, s: Stored, marked: set[str], recorded: late.Recorded) -> set[int]:
        """Handle one followed event; the sequences it erased. ``marked``: the workspaces with
        erasures recorded (late work elsewhere rests on nothing erased), which an erasure
        carried out here joins; ``recorded``: their erasures of named things, which it joins
        too."""
        try:
            event = decode_event(s.data)
        except ValidationError:
            return set()
        if isinstance(event, MessageDeleted | SessionDeleted | PeerDeleted | WorkspaceDeleted):
            t = erasure.Target.of(s.seq, event)
            p = await self.carry_out(t)
            marked.add(event.workspace)
            recorded.add(t.workspace, t.kind, t.name, t.seq)
            return p.secure | p.plain
        return await self._late.handle(s.seq, event, marked, recorded)

    async def carry_out(self, t: erasure.Target) -> erasure.Plan:
        """Erase what ``t`` covers (again, if an earlier run was interrupted)."""
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO erasures (seq, workspace, kind, target) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (seq) DO NOTHING",
                (t.seq, t.workspace, t.kind, t.name),
            )
            cur = await conn.execute(
                "SELECT id FROM erased_ids WHERE workspace = %s AND seq = %s",
                (t.workspace, t.seq),
            )
            already = [str(r["id"]) for r in await cur.fetchall()]
        stored = [
            s
            for f in t.filters()
            for s in await read_stored(self._js, subjects.STREAM, f, before=t.seq)
        ]
        p = erasure.plan(t, stored, already)
        await self._remember(t.workspace, t.seq, p.messages, p.erased_observations)
        await self._retract(t, p)
        erased = await erase(self._nc, subjects.STREAM, p.secure - p.posted, secure=True)
        erased += await erase(self._nc, subjects.STREAM, p.plain, secure=False)
        erased += await erase(self._nc, subjects.STREAM, p.posted, secure=True)
        letters = await self._drop_letters(t, p.secure | p.plain)
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE erasures SET finished_at = now(), events_erased = events_erased + %s,"
                " letters_erased = letters_erased + %s WHERE seq = %s",
                (erased, letters, t.seq),
            )
        log.info(
            "erasure.done",
            workspace=t.workspace,
            kind=t.kind,
            seq=t.seq,
            events=erased,
            observations=len(p.erased_observations),
            letters=letters,
        )
        return p

    async def _remember(
        self, ws: str, seq: int, messages: Iterable[str], observations: Iterable[str]
    ) -> None:
        rows = [(ws, "m", m, seq) for m in messages] + [(ws, "o", o, seq) for o in observations]
        if not rows:
            return
        async with self._pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO erased_ids (workspace, kind, id, seq) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                rows,
            )

    async def _retract(self, t: erasure.Target, p: erasure.Plan) -> None:
        """Tell the memory projection (and the dreamer's schedule) what goes; state again what
        had merged into it."""
        ws, event_id = t.workspace, t.event_id
        gone = p.erased_observations
        events: list[ObservationsErased | SummariesErased] = [
            ObservationsErased(
                event_id=f"{event_id}.erased.{i}",
                workspace=ws,
                observer=rep[0],
                observed=rep[1],
                observation_ids=sorted(ids),
                card=rep in p.cards,
                whole=t.takes_whole(rep),
            )
            for i, (rep, ids) in enumerate(sorted(p.observations.items()))
        ]
        events += [
            SummariesErased(
                event_id=f"{event_id}.summaries.{session}",
                workspace=ws,
                session_id=session,
                summary_seqs=sorted(seqs),
            )
            for session, seqs in sorted(p.summaries.items())
        ]
        if events:
            await self._publisher.publish(events)
        if not gone:
            return
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT alias_id FROM observation_aliases WHERE workspace = %s"
                " AND canonical_id = ANY(%s) AND NOT alias_id = ANY(%s)",
                (ws, sorted(gone), sorted(gone)),
            )
            survivors = [str(r["alias_id"]) for r in await cur.fetchall()]
        for alias in survivors:
            s = p.written.get(alias)
            if s is not None:
                await self._js.publish(
                    s.subject, s.data, headers={MSG_ID_HEADER: f"{event_id}.restated.{alias}"}
                )

    async def _drop_letters(self, t: erasure.Target, seqs: set[int]) -> int:
        """Dead letters holding an erased event, or anything of an erased workspace or session."""
        where, args = "stream_seq = ANY(%s)", list[Any]([sorted(seqs)])
        if t.kind == "workspace":
            where, args = f"({where} OR workspace = %s)", [*args, t.workspace]
        elif t.kind == "session":
            where = f"({where} OR (workspace = %s AND session_id = %s))"
            args = [*args, t.workspace, t.session_id or ""]
        async with self._pool.connection() as conn:
            cur = await conn.execute(f"DELETE FROM dead_letters WHERE {where}", args)
            return int(cur.rowcount or 0)
