"""Work someone waits for goes first within a process: foreground and background steps.

One process forms memory for every workspace it holds: a backlog of one workspace and a new
message of another share its event loop, its threads and its cores. Taken first come first
served, the new message's every step (a query, an embedding, a publish) waits behind the
backlog's, and on a busy loop each wait is tens of milliseconds. So a stage marks the work a
person waits for (a conversation with nothing else queued) as ``foreground`` while it runs, and
starts each step of its backlog with ``background_step``, which waits while foreground work of
another workspace runs in the process. A background step waits at most ``max_wait_s`` at a time, so a steady stream of
foreground work slows a backlog down but never stops it.

A step never waits while it holds something foreground work may need (a pooled connection, a
transaction): the stages call it between batches.

Reads come first too: a query being answered (``answering``) holds back the background steps of
its process, and, through the host's ``ReadsSignal``, those of the other processes on the host
that yield to reads (the memory process under ``mnemo up``). Even at the lowest CPU priority,
background work slowed the reads of a virtual machine's shared vCPUs by a third to a half at the
tail (see ``reads_signal``). A step waits while a read is answered or one ended less than
``quiet_s`` ago (a client asking one after another leaves gaps of a few milliseconds); under
reads that never stop, one background step of the process goes ahead every
``reads_max_wait_s``, so a backlog slows down to a crawl but never stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator

from mnemo_runtime.metrics import BACKGROUND_WAIT_SECONDS
from mnemo_runtime.reads_signal import ReadsSignal

# How often a step waiting on reads looks again; how long after a read the host counts as
# reading still; and how often one step goes ahead of reads that never stop.
POLL_S = 0.005
QUIET_S = 0.02
READS_MAX_WAIT_S = 2.0


class Precedence:
    """The foreground work running in one event loop, by workspace, and the background steps
    waiting on it."""

    def __init__(
        self,
        max_wait_s: float = 0.25,
        reads_max_wait_s: float = READS_MAX_WAIT_S,
        quiet_s: float = QUIET_S,
    ) -> None:
        if max_wait_s <= 0 or reads_max_wait_s <= 0:
            raise ValueError("max_wait_s and reads_max_wait_s must be positive")
        self.max_wait_s = max_wait_s
        self.reads_max_wait_s = reads_max_wait_s
        self.quiet_s = quiet_s
        self._foreground: Counter[str] = Counter()
        self._changed = asyncio.Event()
        self._reads = 0
        self._read_ended = float("-inf")
        self._host: ReadsSignal | None = None
        self._went_ahead = float("-inf")
        self._tick: asyncio.Future[None] | None = None

    def share_reads(self, signal: ReadsSignal | None, *, max_wait_s: float | None = None) -> None:
        """Join the host's reads (None: leave them): as their writer, this process's reads are
        told to the other processes; as a reader, its background steps wait for theirs too."""
        self._host = signal
        if max_wait_s is not None:
            if max_wait_s <= 0:
                raise ValueError("max_wait_s must be positive")
            self.reads_max_wait_s = max_wait_s

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Mark a read being answered (a query someone waits on): background steps wait."""
        self._reads += 1
        try:
            if self._host is not None and self._host.writer:
                with self._host.reading():
                    yield
            else:
                yield
        finally:
            self._reads -= 1
            self._read_ended = time.monotonic()

    @property
    def reading(self) -> bool:
        """Whether a read is answered now, here or (as a reader of the host's) elsewhere, or
        one was less than ``quiet_s`` ago."""
        if self._reads or time.monotonic() - self._read_ended < self.quiet_s:
            return True
        host = self._host
        return host is not None and not host.writer and host.busy(self.quiet_s)

    @property
    def busy(self) -> bool:
        """Whether foreground work runs now."""
        return bool(self._foreground)

    @contextlib.contextmanager
    def foreground(self, workspace: str) -> Iterator[None]:
        """Mark the work inside, for ``workspace``, as foreground: the background steps of other
        workspaces wait until it is done."""
        self._foreground[workspace] += 1
        self._change()
        try:
            yield
        finally:
            self._foreground[workspace] -= 1
            if self._foreground[workspace] <= 0:
                del self._foreground[workspace]
            self._change()

    async def background_step(
        self, stage: str, workspace: str, until: Callable[[], bool] | None = None
    ) -> float:
        """Wait, before a step of ``workspace``'s background work, while foreground work of
        another workspace runs (at most ``max_wait_s``), then while reads are answered (see
        ``_after_reads``); the seconds waited. A workspace's own foreground work never holds
        back its other work: one conversation's messages are derived in any order of batches
        anyway. ``until``, looked at as the step waits, ends the wait when true: work someone
        waits for has come in behind the step (the step holds up a loop that would take it)."""
        if not self._others(workspace) and not self.reading:
            return 0.0
        if until is not None and until():
            return 0.0
        began = time.monotonic()
        deadline = began + self.max_wait_s
        while self._others(workspace) and not (until is not None and until()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                wake = left if until is None else min(left, POLL_S)
                await asyncio.wait_for(self._changed.wait(), wake)
            except TimeoutError:
                if until is None:
                    break
        await self._after_reads(began, until)
        waited = time.monotonic() - began
        BACKGROUND_WAIT_SECONDS.labels(stage).inc(waited)
        return waited

    async def _after_reads(self, began: float, until: Callable[[], bool] | None = None) -> None:
        """Wait while reads are answered; past ``reads_max_wait_s`` from ``began``, go ahead
        if no other step of the process went ahead of them within that time (or once
        ``until`` is true)."""
        while self.reading and not (until is not None and until()):
            now = time.monotonic()
            if now - began >= self.reads_max_wait_s and (
                now - self._went_ahead >= self.reads_max_wait_s
            ):
                self._went_ahead = now
                return
            # One timer for every waiting step: they look again together.
            if self._tick is None or self._tick.done():
                self._tick = asyncio.ensure_future(asyncio.sleep(POLL_S))
            await asyncio.shield(self._tick)

    def _others(self, workspace: str) -> bool:
        return any(w != workspace for w in self._foreground)

    def _change(self) -> None:
        """Wake the waiting steps to look again."""
        self._changed.set()
        self._changed = asyncio.Event()


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Precedence] = (
    weakref.WeakKeyDictionary()
)


def precedence() -> Precedence:
    """The running event loop's precedence: every stage of a process shares it."""
    loop = asyncio.get_running_loop()
    found = _BY_LOOP.get(loop)
    if found is None:
        found = _BY_LOOP[loop] = Precedence()
    return found
