"""The eraser's handling of work that lands after an erasure (see ``late``): it reads what the
decisions need (the erasures recorded, the ids erased, the entity events in between), retracts
what the memory projection may have applied, and erases the late event from the log."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from mnemo_projector import erasure, late
from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool
from mnemo_runtime.streams import erase, read_stored
from mnemo_schema import subjects
from mnemo_schema.events import Event
from mnemo_schema.observations import ObservationsErased, ObservationWritten
from mnemo_schema.summaries import SummariesErased, SummaryUpdated

log = get_logger("mnemo.projector.eraser")

# Records erased message ("m") and observation ("o") ids at an erasure's position.
Remember = Callable[[str, int, Iterable[str], Iterable[str]], Awaitable[None]]


class LateWork:
    """Finds and erases the late work of one eraser's steps."""

    def __init__(
        self,
        nc: NATS,
        js: JetStreamContext,
        pool: Pool,
        publisher: EventPublisher,
        remember: Remember,
    ) -> None:
        self._nc = nc
        self._js = js
        self._pool = pool
        self._publisher = publisher
        self._remember = remember

    async def handle(
        self, seq: int, event: Event, marked: set[str], recorded: late.Recorded
    ) -> set[int]:
        """The sequences erased as late work at ``seq``. ``marked``: the workspaces with
        erasures recorded (late work elsewhere rests on nothing erased); ``recorded``: their
        erasures of peers, sessions and workspaces. Work of an erased representation goes whole
        first (its retraction says so), whatever it cites; then what cites an erased message or
        observation."""
        if isinstance(event, late.Named) and event.workspace in marked:
            after = recorded.last_before(event, seq)
            if after is not None and (gone := await self._named(seq, event, after)):
                return gone
        cites = ObservationWritten | SummaryUpdated
        if isinstance(event, cites) and event.workspace in marked and await self._late(seq, event):
            return {seq}
        return set()

    async def marks(self, workspaces: set[str]) -> tuple[set[str], late.Recorded]:
        """Of ``workspaces``, those with any erasure or erased id recorded, and their erasures
        of peers, sessions and workspaces (few: a message's erasure records its ids instead)."""
        recorded = late.Recorded()
        if not workspaces:
            return set(), recorded
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT w AS workspace FROM unnest(%s::text[]) AS w"
                " WHERE EXISTS (SELECT 1 FROM erased_ids e WHERE e.workspace = w)"
                " OR EXISTS (SELECT 1 FROM erasures e WHERE e.workspace = w)",
                (sorted(workspaces),),
            )
            rows: list[Any] = await cur.fetchall()
            marked = {str(r["workspace"]) for r in rows}
            if marked:
                cur = await conn.execute(
                    "SELECT workspace, kind, target, seq FROM erasures"
                    " WHERE workspace = ANY(%s) AND kind <> 'message'",
                    (sorted(marked),),
                )
                named: list[Any] = await cur.fetchall()
                for r in named:
                    recorded.add(r["workspace"], r["kind"], r["target"], int(r["seq"]))
        return marked, recorded

    async def _late(self, seq: int, e: ObservationWritten | SummaryUpdated) -> bool:
        """An observation or summary landing after an erasure of what it rests on goes too;
        whether it went."""
        if isinstance(e, ObservationWritten):
            cited = [("m", m) for m in e.source_message_ids] + [("o", o) for o in e.premise_ids]
        else:
            cited = [("m", e.message_id)]
        if not cited or not await self._erased(e.workspace, cited):
            return False
        if isinstance(e, ObservationWritten):
            at = await self._erasure_of(e.workspace, cited)
            await self._remember(e.workspace, at, [], [e.observation_id])
            erased = ObservationsErased(
                event_id=f"{e.event_id}.erased",
                workspace=e.workspace,
                observer=e.observer,
                observed=e.observed,
                observation_ids=[e.observation_id],
            )
            await self._publisher.publish([erased])
        else:
            dropped = SummariesErased(
                event_id=f"{e.event_id}.erased",
                workspace=e.workspace,
                session_id=e.session_id,
                summary_seqs=[seq],
            )
            await self._publisher.publish([dropped])
        await erase(self._nc, subjects.STREAM, [seq], secure=True)
        log.info("erasure.late_work_erased", workspace=e.workspace, seq=seq, type=e.type)
        return True

    async def _named(self, seq: int, e: late.Named, after: int) -> set[int]:
        """Progress, a dream's event, a card or an observation landing after the erasure of its
        peer, session or workspace (work that was in flight) goes too, unless what it names was
        made again in between (after the erasure at ``after``). An observation, a card, or a dream
        that was due is retracted first, for the memory projection
        (``late.late_retraction``)."""
        kind, names = late.named_by(e)
        entities = subjects.workspace_entities(e.workspace)
        between = await read_stored(self._js, subjects.STREAM, entities, after=after, before=seq)
        if late.made_again(kind, names, between):
            return set()
        if isinstance(e, ObservationWritten):
            # What rests on it, landing later still, goes the same way.
            await self._remember(e.workspace, after, [], [e.observation_id])
        retraction = late.late_retraction(e)
        if retraction is not None:
            await self._publisher.publish([retraction])
        await erase(self._nc, subjects.STREAM, [seq], secure=erasure.holds_text(e))
        log.info("erasure.late_work_erased", workspace=e.workspace, seq=seq, type=e.type)
        return {seq}

    async def _erased(self, ws: str, cited: list[tuple[str, str]]) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT 1 FROM erased_ids WHERE workspace = %s AND (kind, id) IN"
                ' (SELECT * FROM unnest(%s::"char"[], %s::text[])) LIMIT 1',
                (ws, [k for k, _ in cited], [i for _, i in cited]),
            )
            return await cur.fetchone() is not None

    async def _erasure_of(self, ws: str, cited: list[tuple[str, str]]) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT max(seq) AS seq FROM erased_ids WHERE workspace = %s AND id = ANY(%s)",
                (ws, [i for _, i in cited]),
            )
            row: Any = await cur.fetchone()
            return int(row["seq"] or 0)
