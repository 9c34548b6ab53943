"""The projection loop: read the log from the stored position, apply in batches, record position.

Position and effects commit in one transaction. The consumer is ephemeral and starts from the
position in Postgres, so Postgres alone says what has been applied: after a crash the loop resumes
exactly where the last commit left it, and a rebuild (position reset to 0) is noticed as a gap and
answered by re-reading the log from the start.
"""

from __future__ import annotations

import asyncio
import contextlib
from itertools import groupby

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
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
        sub = await self._js.pull_subscribe(
            subjects.EVENT_SUBJECTS,
            stream=subjects.STREAM,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=start,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=60.0,
                mem_storage=True,
            ),
        )
        try:
            while not stop.is_set():
                try:
                    # Wake on the first new event, then take whatever else is already there:
                    # a single large fetch would linger until its batch filled or timed out.
                    msgs = await sub.fetch(1, timeout=0.5)
                    with contextlib.suppress(TimeoutError, NatsTimeout):
                        msgs += await sub.fetch(self._batch - 1, timeout=0.002)
                except (TimeoutError, NatsTimeout):
                    # Idle: a rebuild may have reset the position under us.
                    async with self._pool.connection() as conn:
                        position = await read_position(conn)
                    if position < start - 1 or position < self.applied:
                        self.applied = position
                        return
                    continue
                if not await self._apply(msgs):
                    return
        finally:
            try:
                await sub.unsubscribe()
            except Exception:
                log.debug("projector.unsubscribe_failed")

    async def _apply(self, msgs: list[Msg]) -> bool:
        """Apply one fetched batch; False if it does not continue the stored position."""
        batch: list[tuple[int, Event]] = [
            (int(m.metadata.sequence.stream), decode_event(m.data)) for m in msgs
        ]
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "SELECT seq FROM projection_positions WHERE name = %s FOR UPDATE", (PROJECTION,)
            )
            row = await cur.fetchone()
            position = int(row["seq"])  # type: ignore[call-overload,index]
            fresh = [(s, e) for s, e in batch if s > position]
            if not fresh:
                return True
            if fresh[0][0] != position + 1:
                log.info("projector.gap", position=position, next=fresh[0][0])
                self.applied = position
                return False
            with self._spans(fresh):
                await apply_batch(conn, fresh)
            last = fresh[-1][0]
            await conn.execute(
                "UPDATE projection_positions SET seq = %s WHERE name = %s", (last, PROJECTION)
            )
        self.applied = last
        await self._nc.publish(subjects.PROJECTOR_APPLIED, str(last).encode())
        return True

    def _spans(self, batch: list[tuple[int, Event]]) -> _SpanGroup:
        return _SpanGroup(batch)


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
