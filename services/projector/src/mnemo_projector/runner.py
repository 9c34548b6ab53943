"""The projection loop of one partition: read the log from the stored position, apply in
batches, record the position.

Position and effects commit in one transaction. The consumer is ephemeral and starts from the
position in Postgres, so Postgres alone says what has been applied: after a crash the loop resumes
exactly where the last commit left it, and a rebuild (position reset) is answered by re-reading
the log from there. Each partition of the log has its own position and its own loop; a lease
(``mnemo_runtime.partitions``) says which process runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from psycopg import AsyncPipeline

from mnemo_projector.intake import Intake
from mnemo_projector.lines import Lines
from mnemo_projector.positions import (
    Projection,
    advance_guarded,
    ensure_position,
    mark_failing,
    move_floor,
    read_ahead,
    read_position,
)
from mnemo_projector.quarantine import Delivered, RetryPolicy, settle
from mnemo_projector.redrive import Redrives
from mnemo_projector.spans import SpanGroup
from mnemo_projector.urgency import Pace, RecentWork
from mnemo_runtime import direct
from mnemo_runtime.deadletters import DeadLetters, Letter, sanitised, transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Connection, Pool
from mnemo_runtime.precedence import precedence
from mnemo_schema.events import Event

log = get_logger("mnemo.projector")

# How often an idle loop looks for letters an operator asked to redrive (a busy one: every
# ``BUSY_REDRIVE_S``) and reads its stored position (a rebuild may have reset it). Every
# partition's loop does, so an idle process with dozens of loops would otherwise ask Postgres
# dozens of times a second for nothing.
IDLE_LOOK_S = 2.0
BUSY_REDRIVE_S = 5.0


class Projector:
    """Keeps one read model in step with the event stream."""

    def __init__(
        self,
        projection: Projection,
        nc: NATS,
        js: JetStreamContext,
        pool: Pool,
        batch_size: int = 1000,
        retry: RetryPolicy | None = None,
        partition: int = 0,
        partitions: int = 1,
        turn_s: float | None = None,
        max_held: int = 20_000,
    ) -> None:
        if max_held < batch_size:
            raise ValueError("max_held must be at least the batch size")
        self.projection = projection
        # A projection taking workspaces in turns: batches about ``turn_s`` long; in log order
        # (or no ``turn_s``): always ``batch_size`` at most.
        self._pace = Pace(turn_s if projection.fair else None)
        self._recent = RecentWork() if projection.fair else None
        self.partition = partition
        self._filters = projection.filters(partition)
        # Events received and not yet applied: at most ``max_held`` (see ``intake``).
        # A projection taking workspaces in turns holds at most half of it of one workspace.
        share = max_held // 2 if projection.fair else None
        self.intake = Intake(nc, js, self._filters, max_held, projection.name, partition, share)
        self._nc = nc
        self._js = js
        self._pool = pool
        self._batch = batch_size
        self._retry = retry or RetryPolicy()
        self._dead = DeadLetters(js, pool, f"projector-{projection.name}")
        self._redrives = Redrives(self._dead, projection, js, pool, partition, partitions)
        # Whether projection_positions may say this partition is failing: cleared once it
        # follows the log again, or applies a batch. It starts true, since the mark may be left
        # by an earlier process (killed while failing) or set by a last attempt just before the
        # database went away.
        self._failing = True
        self.applied = 0

    async def setup(self, read_model: bool = True) -> None:
        """Create the read model if needed (``read_model``: not when another partition's
        projector of this process did) and read this partition's position."""
        await self._dead.ensure()
        async with self._pool.connection() as conn:
            if read_model:
                await self.projection.setup(conn)
            await ensure_position(conn, self.projection.name, self.partition)
            self.applied = await read_position(conn, self.projection.name, self.partition)

    async def run(self, stop: asyncio.Event) -> None:
        """Project until ``stop`` is set."""
        while not stop.is_set():
            try:
                await self._follow(stop)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.exception("projector.loop_failed", projection=self.projection.name)
                await self._mark_failing(err)
                await asyncio.sleep(0.5)

    async def catch_up(self) -> int:
        """Apply everything the log holds for this projection now, then return the position."""
        stop = asyncio.Event()
        task = asyncio.create_task(self.run(stop))
        try:
            while await self.pending() > 0:
                await asyncio.sleep(0.02)
                if task.done():
                    task.result()
        finally:
            stop.set()
            await task
        return self.applied

    async def pending(self) -> int:
        """Events of this projection's filters after the applied position."""
        total = 0
        for subject in self._filters:
            found = await direct.next_from(self._nc, subject, self.applied + 1)
            total += 0 if found is None else found.pending + 1
        return total

    async def _position(self) -> int:
        async with self._pool.connection() as conn:
            return await read_position(conn, self.projection.name, self.partition)

    async def _follow(self, stop: asyncio.Event) -> None:
        async with self._pool.connection() as conn:
            floor = await read_position(conn, self.projection.name, self.partition)
            ahead = await read_ahead(conn, self.projection.name, self.partition)
        self.applied = floor
        lines = Lines(self._batch, fair=self.projection.fair, floor=floor, ahead=ahead)
        intake = self.intake
        await intake.start(floor + 1)
        if self._failing:
            # Following the log again, the database answering: whatever failed is over (a
            # backlog's first batch can take long to apply; the lag says how far behind it is).
            await self._mark_failing(None)
        looked = time.monotonic()  # the position was read just now
        try:
            while not stop.is_set():
                if intake.receiving and not lines and lines.floor_after() <= self.applied:
                    # Nothing to apply and the floor where it can be: wait for the log (or a
                    # workspace's events read again).
                    await intake.refill(lines)
                    try:
                        await intake.wait(0.5)
                    except TimeoutError:
                        await self.projection.idle()
                        await self._redrives.run(at_most_every_s=IDLE_LOOK_S)
                        if time.monotonic() - looked >= IDLE_LOOK_S:
                            looked = time.monotonic()
                            if (position := await self._position()) < self.applied:
                                self.applied = position  # reset by a rebuild
                                return
                        continue
                await intake.take_into(lines)
                workspace, items = lines.take(self._pace.limit(precedence().reading))
                if not await self._apply_in_turn(lines, workspace, items, time.monotonic()):
                    return
                await self._redrives.run(at_most_every_s=BUSY_REDRIVE_S)
        finally:
            await intake.close()

    async def _apply_in_turn(
        self, lines: Lines, workspace: str, items: list[Delivered], now: float
    ) -> bool:
        """``_apply``; for a projection taking workspaces in turns, a conversation's batch as
        foreground work and a backlog's after the foreground work of the process."""
        if self._recent is None or not items:
            return await self._paced(lines, workspace, items)
        with self.intake.behind(workspace) as arrived:
            return await self._recent.in_turn(
                f"projector-{self.projection.name}",
                workspace,
                [d.event for d in items],
                lines.count(workspace),
                now,
                lambda: self._paced(lines, workspace, items),
                arrived=arrived,
            )

    async def _paced(self, lines: Lines, workspace: str, items: list[Delivered]) -> bool:
        """``_apply``, its time (not the batch's wait for its turn) recorded for the pace."""
        began = time.monotonic()
        applied = await self._apply(lines, workspace, items)
        if applied:
            self._pace.record(time.monotonic() - began, len(items))
        return applied

    async def _apply(self, lines: Lines, workspace: str, items: list[Delivered]) -> bool:
        """Apply one batch of ``workspace``'s line (none: only move the floor past what was
        applied already); False if the stored position moved under this projector.

        The position is checked optimistically in the same transaction or statement
        (``seq = expected``), so two projectors or a concurrent rebuild can never both advance it.
        A batch that fails for a reason of its own is applied again one event at a time, so the
        event at fault is found, tried again and, failing that, quarantined.
        """
        position = self.applied
        floor = lines.floor_after()
        last = items[-1].seq if items else floor
        try:
            if not items:
                await self._apply_in_transaction([], position, floor)
            elif all(d.event is not None for d in items):
                fresh = [(d.seq, d.event) for d in items if d.event is not None]
                guarded = None if self.projection.fair else self.projection.guarded(fresh)
                if guarded is not None:
                    await self._apply_guarded(guarded, fresh, position, floor)
                else:
                    await self._apply_in_transaction(fresh, position, floor, workspace, last)
            else:
                await self._apply_one_by_one(lines, workspace, items, position)
                return True
        except _PositionMoved:
            log.info("projector.position_moved", projection=self.projection.name)
            return False
        except Exception as err:
            if transient(err):
                await self._mark_failing(err)
                raise
            log.warning(
                "projector.batch_failed",
                projection=self.projection.name,
                error=repr(err),
                first_seq=items[0].seq if items else None,
                events=len(items),
            )
            try:
                await self._apply_one_by_one(lines, workspace, items, position)
            except _PositionMoved:
                log.info("projector.position_moved", projection=self.projection.name)
                return False
            return True
        await self._advanced(lines, workspace, last, floor)
        return True

    async def _advanced(self, lines: Lines, workspace: str, last: int, floor: int) -> None:
        """Record that ``workspace``'s events up to ``last`` are applied and the floor is
        ``floor``; announce it (``<partition>:<floor>``, and ``:<last>:<workspace>`` when the
        workspace is past the floor)."""
        self.applied = floor
        lines.applied(workspace, last, floor)
        note = f"{self.partition}:{floor}"
        if workspace and last > floor:
            note += f":{last}:{workspace}"
        await self._nc.publish(self.projection.applied_subject, note.encode())
        if self._failing:
            await self._mark_failing(None)

    async def _apply_one_by_one(
        self, lines: Lines, workspace: str, items: list[Delivered], position: int
    ) -> None:
        """Each event in its own transaction; one that keeps failing is quarantined."""
        for i, item in enumerate(items):
            floor = lines.floor_after(items[i + 1 :])
            for attempt in range(1, self._retry.attempts + 1):
                try:
                    if item.event is None:
                        raise _Undecodable(item.error or "undecodable event")
                    await self._apply_in_transaction(
                        [(item.seq, item.event)], position, floor, workspace, item.seq
                    )
                    break
                except _PositionMoved:
                    raise
                except Exception as err:
                    if transient(err):
                        await self._mark_failing(err)
                        raise
                    reason = str(err) if isinstance(err, _Undecodable) else repr(err)
                    if isinstance(err, _Undecodable) or attempt == self._retry.attempts:
                        await self._quarantine(item, reason, attempt, position, floor, workspace)
                        break
                    await self._mark_failing(err)
                    await self._retry.pause(attempt)
            await self._advanced(lines, workspace, item.seq, floor)
            position = floor

    async def _quarantine(
        self,
        item: Delivered,
        reason: str,
        attempts: int,
        position: int,
        floor: int,
        workspace: str,
    ) -> None:
        """Record the dead letter (or apply the operator's correction) and move past the event,
        in one transaction."""
        announce: tuple[int, Letter] | None = None
        async with self._pool.connection() as conn, conn.transaction():
            instead, announce = await settle(conn, self._dead, item, reason, attempts)
            if instead is not None:
                await self.projection.apply(conn, [(item.seq, instead)])
            await self._move(conn, position, floor, workspace, item.seq)
        if announce is not None:
            await self._dead.announce(*announce)

    async def _mark_failing(self, err: BaseException | None) -> None:
        """Say in projection_positions whether this projection is failing (readiness reads it)."""
        try:
            async with self._pool.connection() as conn:
                error = None if err is None else sanitised(repr(err))[:2000]
                await mark_failing(conn, self.projection.name, self.partition, error)
            self._failing = err is not None
        except Exception as mark_err:
            log.debug("projector.mark_failed", error=repr(mark_err))

    async def _apply_guarded(
        self,
        statement: tuple[str, tuple[Any, ...]],
        fresh: list[tuple[int, Event]],
        position: int,
        last: int,
    ) -> None:
        async with self._pool.connection() as conn:
            with SpanGroup(fresh, self.projection.name):
                advanced = await advance_guarded(
                    conn, self.projection.name, self.partition, statement, position, last
                )
        if not advanced:
            raise _PositionMoved

    async def _apply_in_transaction(
        self,
        fresh: list[tuple[int, Event]],
        position: int,
        floor: int,
        workspace: str = "",
        last: int = 0,
    ) -> None:
        async with self._pool.connection() as conn, contextlib.AsyncExitStack() as stack:
            # Pipelined, a batch costs two round trips, not one per statement.
            pipeline = (
                await stack.enter_async_context(conn.pipeline())
                if self.projection.pipelined
                else None
            )
            async with conn.transaction():
                # The log is the record: if Postgres loses the newest commits in a crash,
                # effects and position are lost together and the tail is replayed, so the
                # commit need not wait for its WAL flush.
                await conn.execute("SET LOCAL synchronous_commit TO OFF")
                if fresh:
                    with SpanGroup(fresh, self.projection.name):
                        await self.projection.apply(conn, fresh)
                await self._move(conn, position, floor, workspace, last, pipeline)

    async def _move(
        self,
        conn: Connection,
        position: int,
        floor: int,
        workspace: str,
        last: int,
        pipeline: AsyncPipeline | None = None,
    ) -> None:
        """In the caller's transaction: move the floor from ``position`` to ``floor`` (raise
        _PositionMoved if it is not at ``position``) and record how far ``workspace`` is."""
        moved = await move_floor(
            conn,
            self.projection.name,
            self.partition,
            position,
            floor,
            (workspace, last) if self.projection.fair else None,
            pipeline,
        )
        if not moved:
            raise _PositionMoved


class _PositionMoved(Exception):
    """The stored position changed under this projector (a rebuild or another instance)."""


class _Undecodable(Exception):
    """An event that does not decode: quarantined without further tries."""
