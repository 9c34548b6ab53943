"""What a partition's projector receives from the log, and how much of it it holds.

An ordered push consumer: the server sends new events as they are stored, with flow control and
gap detection handled by the client; nothing is acknowledged because the position lives in
Postgres. Received events go into the projector's ``Lines`` as their bytes (``Delivered``
decodes them when their batch is applied), at most ``max_held`` of them: past it the intake
stops receiving, lets go of what came past the limit, and once half are applied subscribes
again from the last event it took, so a backlog waits in the log instead of in memory.

A projection that takes workspaces in turns holds at most ``share`` events of one workspace:
past it, that workspace's later events are let go (a gap in its line, ``Lines.gaps``) while the
others' are still received, so a workspace whose backlog fills the partition's hold does not
keep another of the same partition waiting for all of it. Once the line has room again, the
workspace's own events are read again from the log from its gap on (a consumer filtered to that
workspace, ``_Refill``), until everything of it the intake let go is queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from mnemo_projector.lines import Lines
from mnemo_projector.quarantine import Delivered
from mnemo_runtime import direct
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects

log = get_logger("mnemo.projector")

# A re-read that has had nothing for this long asks the log whether anything of its workspace is
# left to read: an event it was to read again may have been erased since it was let go.
REFILL_QUIET_S = 2.0


class _Refill:
    """A workspace's events read again from the log, from its gap on."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.sub: Any = None
        self.heard = time.monotonic()


class Intake:
    """One partition's subscription to its projection's events, bounded by ``max_held`` (and,
    for a projection taking workspaces in turns, ``share`` a workspace)."""

    def __init__(
        self,
        nc: NATS,
        js: JetStreamContext,
        filters: list[str],
        max_held: int,
        name: str,
        partition: int,
        share: int | None = None,
    ) -> None:
        self._nc = nc
        self._js = js
        self._filters = filters
        self.max_held = max_held
        self.share = share
        self._name = name
        self._partition = partition
        # What the subscriptions delivered: each message with the re-read it came from (None:
        # the log, in order).
        self._inbox: asyncio.Queue[tuple[Msg, _Refill | None]] = asyncio.Queue()
        self._first: list[tuple[Msg, _Refill | None]] = []
        self._sub: Any = None
        self._refills: dict[str, _Refill] = {}
        # workspace -> the newest of its events received in order and let go (while it has a gap)
        self._let_go: dict[str, int] = {}
        # Events received from the log that someone may wait on (observations, messages): a
        # batch waiting as a background step looks whether one came in behind it, and, while
        # it waits (``behind``), whether one of another workspace did.
        self.awaitable = 0
        self._watched: str | None = None
        self.others_awaitable = False
        # Events held when last counted, how often receiving paused, how many re-reads began.
        self.held = 0
        self.pauses = 0
        self.refills = 0

    @property
    def receiving(self) -> bool:
        return self._sub is not None

    @property
    def gapped(self) -> frozenset[str]:
        """The workspaces whose events past their share were let go and are not all queued."""
        return frozenset(self._let_go)

    async def start(self, start: int) -> None:
        """Receive from ``start`` on (a fresh inbox)."""
        await self.close()
        self._inbox = asyncio.Queue()
        self._first = []
        self._let_go = {}
        await self._subscribe(start)

    async def wait(self, timeout: float) -> None:
        """Until something was received, waiting up to ``timeout`` (TimeoutError)."""
        if not self._first and self._inbox.empty():
            self._first.append(await asyncio.wait_for(self._inbox.get(), timeout))

    def _pending(self) -> bool:
        return bool(self._first) or not self._inbox.empty()

    def _next(self) -> tuple[Msg, _Refill | None]:
        return self._first.pop(0) if self._first else self._inbox.get_nowait()

    async def take_into(self, lines: Lines) -> None:
        """Put what was received into ``lines``, up to the limits; stop receiving at the
        partition's, and receive again from the log once ``lines`` holds half of it; read a
        workspace's let-go events again once its line has room."""
        while self._pending() and len(lines) < self.max_held:
            msg, refill = self._next()
            item = Delivered.of(msg)
            if refill is None:
                self._from_log(lines, item)
            else:
                await self._from_refill(lines, refill, item)
        self.held = len(lines)
        if len(lines) >= self.max_held:
            # Past the limit: what came past it is let go, read from the log again on resuming;
            # a re-read stops, and starts again from its gap once there is room.
            for workspace in list(self._refills):
                await self._stop_refill(workspace)
            while self._pending():
                self._next()
            if self._sub is not None:
                await self._stop_log()
                self.pauses += 1
                log.info(
                    "projector.receiving_paused",
                    projection=self._name,
                    partition=self._partition,
                    held=len(lines),
                )
        elif self._sub is None and len(lines) <= self.max_held // 2:
            await self._subscribe(lines.received + 1)
        await self.refill(lines)

    def _from_log(self, lines: Lines, item: Delivered) -> None:
        workspace = lines.line_of(item)
        if workspace in lines.gaps or (
            self.share is not None and lines.count(workspace) >= self.share
        ):
            lines.let_go(item)
            if workspace in lines.gaps and item.seq > lines.last(workspace):
                self._let_go[workspace] = item.seq
            return
        lines.put(item)

    async def _from_refill(self, lines: Lines, refill: _Refill, item: Delivered) -> None:
        workspace = refill.workspace
        if self._refills.get(workspace) is not refill:
            return  # from a re-read stopped since: its events are read again from the gap
        refill.heard = time.monotonic()
        if self.share is not None and lines.count(workspace) >= self.share:
            await self._stop_refill(workspace)  # full again: on from its gap once it has room
            return
        lines.put_again(item)
        await self._closed_if_whole(lines, workspace)

    async def _closed_if_whole(self, lines: Lines, workspace: str) -> None:
        """Close ``workspace``'s gap once everything of it let go is queued or applied: its
        later events come in order from the log again."""
        if lines.last(workspace) >= self._let_go.get(workspace, 0):
            lines.close_gap(workspace)
            self._let_go.pop(workspace, None)
            await self._stop_refill(workspace)

    async def refill(self, lines: Lines) -> None:
        """Begin reading again each workspace whose gap has room in its line; a re-read that
        has heard nothing for a while and has nothing left closes its gap (what it was to read
        again was erased from the log)."""
        share = self.share or self.max_held
        for workspace, gap in list(lines.gaps.items()):
            refill = self._refills.get(workspace)
            if refill is None:
                if lines.count(workspace) <= share // 2 and len(lines) < self.max_held:
                    await self._start_refill(workspace, gap)
            elif time.monotonic() - refill.heard > REFILL_QUIET_S:
                refill.heard = time.monotonic()
                # An event let go while the log is asked is in it; one let go since is not seen.
                let_go = self._let_go.get(workspace)
                if (
                    not await self._left(workspace, gap)
                    and self._refills.get(workspace) is refill
                    and self._let_go.get(workspace) == let_go
                ):
                    lines.close_gap(workspace)
                    self._let_go.pop(workspace, None)
                    await self._stop_refill(workspace)

    async def _left(self, workspace: str, start: int) -> bool:
        """Whether the log holds an event of ``workspace`` on the projection's filters at or
        after ``start`` (asked of the stream itself: past erased events, a consumer's position
        moves on with nothing delivered); True when the log cannot be asked."""
        try:
            for f in self._filters:
                if await direct.next_from(self._nc, subjects.of_workspace(f, workspace), start):
                    return True
        except Exception:
            return True
        return False

    async def _start_refill(self, workspace: str, start: int) -> None:
        refill = _Refill(workspace)
        self._refills[workspace] = refill
        self.refills += 1
        filters = [subjects.of_workspace(f, workspace) for f in self._filters]

        async def received(msg: Msg) -> None:
            await self._inbox.put((msg, refill))

        refill.sub = await self._ordered(filters, start, received)

    async def _stop_refill(self, workspace: str) -> None:
        refill = self._refills.pop(workspace, None)
        if refill is not None and refill.sub is not None:
            await _unsubscribe(refill.sub)

    async def close(self) -> None:
        """Stop receiving (from the log and every re-read)."""
        await self._stop_log()
        for workspace in list(self._refills):
            await self._stop_refill(workspace)

    async def _stop_log(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            await _unsubscribe(sub)

    @contextlib.contextmanager
    def behind(self, workspace: str) -> Iterator[Callable[[bool], bool]]:
        """While a batch of ``workspace`` waits its turn: ``arrived(own)`` says whether an event
        someone may wait on came in behind it since, of any workspace (``own``) or of another."""
        seen = self.awaitable
        self._watched, self.others_awaitable = workspace, False
        try:
            yield lambda own: self.awaitable > seen if own else self.others_awaitable
        finally:
            self._watched = None

    async def _subscribe(self, start: int) -> None:
        async def received(msg: Msg) -> None:
            if _awaitable(msg.subject):
                self.awaitable += 1
                watched = self._watched
                if watched is not None and subjects.workspace_of_subject(msg.subject) != watched:
                    self.others_awaitable = True
            await self._inbox.put((msg, None))

        self._sub = await self._ordered(self._filters, start, received)

    async def _ordered(self, filters: list[str], start: int, cb: Any) -> Any:
        several = len(filters) > 1
        return await self._js.subscribe(
            filters[0],
            stream=subjects.STREAM,
            cb=cb,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            config=ConsumerConfig(
                opt_start_seq=start,
                mem_storage=True,
                filter_subjects=filters if several else None,
            ),
            idle_heartbeat=5.0,
        )


def _awaitable(subject: str) -> bool:
    """Whether a stored event's subject (``mnemo.evt.<workspace>.<partition>.<kind>...``) is
    of a kind someone may wait on: an observation or a message."""
    parts = subject.split(".", 5)
    return len(parts) > 4 and parts[4] in ("obs", "msg")


async def _unsubscribe(sub: Any) -> None:
    try:
        await sub.unsubscribe()
    except Exception:
        log.debug("projector.unsubscribe_failed")
