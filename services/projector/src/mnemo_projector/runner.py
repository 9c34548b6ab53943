"""The projection loop: read the log from the stored position, apply in batches, record position.

Position and effects commit in one transaction. The consumer is ephemeral and starts from the
position in Postgres, so Postgres alone says what has been applied: after a crash the loop resumes
exactly where the last commit left it, and a rebuild (position reset to 0) is noticed as a gap and
answered by re-reading the log from the start.
"""

from __future__ import annotations

import asyncio
from itertools import groupby

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from mnemo_projector.domain import apply_batch
from mnemo_projector.tables import PROJECTION, create_tables
from mnemo_runtime.bus import stream_last_seq
from mnemo_runtime.logging import get_logger
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_schema import subjects
from mnemo_schema.events import Event, decode_event

log = get_logger("mnemo.projector")
_tracer = tracer("mnemo.projector")


async def read_position(conn: AsyncConnection) -> int:
    """The last applied stream position."""
    cur = await conn.execute("SELECT seq FROM projection_positions WHERE name = %s", (PROJECTION,))
    row = await cur.fetchone()
    return 0 if row is None else int(row["seq"])  # type: ignore[call-overload]


class PgProjector:
    """Keeps the Postgres read models in step with the event stream."""

    def __init__(
        self, nc: NATS, js: JetStreamContext, pool: AsyncConnectionPool, batch_size: int = 1000
    ) -> None:
        self._nc = nc
        self._js = js
        self._pool = pool
        self._batch = batch_size
        self.applied = 0

    async def setup(self) -> None:
        """Create the tables if needed."""
        async with self._pool.connection() as conn:
            await create_tables(conn)
            self.applied = await read_position(conn)

    async def run(self, stop: asyncio.Event) -> None:
        """Project until ``stop`` is set."""
        while not stop.is_set():
            try:
                await self._follow(stop)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("projector.loop_failed")
                await asyncio.sleep(0.5)

    async def catch_up(self) -> int:
        """Apply everything up to the current head of the log, then return the position."""
        head = await stream_last_seq(self._js)
        stop = asyncio.Event()
        task = asyncio.create_task(self.run(stop))
        try:
            while self.applied < head:
                await asyncio.sleep(0.02)
                if task.done():
                    task.result()
        finally:
            stop.set()
            await task
        return self.applied

    async def _follow(self, stop: asyncio.Event) -> None:
        async with self._pool.connection() as conn:
            start = await read_position(conn) + 1
        self.applied = start - 1
        # An ordered push consumer: the server sends new events as they are stored, with flow
        # control and gap detection handled by the client; nothing is acknowledged because the
        # position lives in Postgres.
        inbox: asyncio.Queue[Msg] = asyncio.Queue()
        sub = await self._js.subscribe(
            subjects.EVENT_SUBJECTS,
            stream=subjects.STREAM,
            cb=inbox.put,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            config=ConsumerConfig(opt_start_seq=start, mem_storage=True),
            idle_heartbeat=5.0,
        )
        try:
            while not stop.is_set():
                try:
                    first = await asyncio.wait_for(inbox.get(), timeout=0.5)
                except TimeoutError:
                    # Idle: a rebuild may have reset the position under us.
                    async with self._pool.connection() as conn:
                        position = await read_position(conn)
                    if position < self.applied:
                        self.applied = position
                        return
                    continue
                msgs = [first]
                while len(msgs) < self._batch and not inbox.empty():
                    msgs.append(inbox.get_nowait())
                if not await self._apply(msgs):
                    return
        finally:
            try:
                await sub.unsubscribe()
            except Exception:
                log.debug("projector.unsubscribe_failed")

    async def _apply(self, msgs: list[Msg]) -> bool:
        """Apply one fetched batch; False if it does not continue the stored position.

        The position is checked optimistically in the same transaction (``seq = expected``), so
        two projectors or a concurrent rebuild can never both advance it.
        """
        batch: list[tuple[int, Event]] = [
            (int(m.metadata.sequence.stream), decode_event(m.data)) for m in msgs
        ]
        position = self.applied
        fresh = [(s, e) for s, e in batch if s > position]
        if not fresh:
            return True
        if fresh[0][0] != position + 1:
            log.info("projector.gap", position=position, next=fresh[0][0])
            return False
        last = fresh[-1][0]
        try:
            async with self._pool.connection() as conn, conn.transaction():
                # The log is the record: if Postgres loses the newest commits in a crash, effects
                # and position are lost together and the tail is replayed, so the commit need
                # not wait for its WAL flush.
                await conn.execute("SET LOCAL synchronous_commit TO OFF")
                with self._spans(fresh):
                    await apply_batch(conn, fresh)
                cur = await conn.execute(
                    "UPDATE projection_positions SET seq = %s WHERE name = %s AND seq = %s",
                    (last, PROJECTION, position),
                )
                if cur.rowcount != 1:
                    raise _PositionMoved
        except _PositionMoved:
            log.info("projector.position_moved", expected=position)
            return False
        self.applied = last
        await self._nc.publish(subjects.PROJECTOR_APPLIED, str(last).encode())
        return True

    def _spans(self, batch: list[tuple[int, Event]]) -> _SpanGroup:
        return _SpanGroup(batch)


class _PositionMoved(Exception):
    """The stored position changed under this projector (a rebuild or another instance)."""


class _SpanGroup:
    """One span per originating request in a batch, parented on that request's trace context."""

    def __init__(self, batch: list[tuple[int, Event]]) -> None:
        self._batch = batch
        self._spans: list[object] = []

    def __enter__(self) -> None:
        for trace, group in groupby(self._batch, key=lambda se: se[1].trace.get("traceparent")):
            if trace is None:
                continue
            items = list(group)
            span = _tracer.start_span(
                "projector.apply",
                context=extract_context(items[0][1].trace),
                attributes={"events": len(items), "first_seq": items[0][0]},
            )
            self._spans.append(span)

    def __exit__(self, *exc: object) -> None:
        for span in self._spans:
            span.end()  # type: ignore[attr-defined]
