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
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import Counter
from collections.abc import Iterator

from mnemo_runtime.metrics import BACKGROUND_WAIT_SECONDS


class Precedence:
    """The foreground work running in one event loop, by workspace, and the background steps
    waiting on it."""

    def __init__(self, max_wait_s: float = 0.25) -> None:
        if max_wait_s <= 0:
            raise ValueError("max_wait_s must be positive")
        self.max_wait_s = max_wait_s
        self._foreground: Counter[str] = Counter()
        self._changed = asyncio.Event()

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

    async def background_step(self, stage: str, workspace: str) -> float:
        """Wait, before a step of ``workspace``'s background work, while foreground work of
        another workspace runs (at most ``max_wait_s``); the seconds waited. A workspace's own
        foreground work never holds back its other work: one conversation's messages are
        derived in any order of batches anyway."""
        if not self._others(workspace):
            return 0.0
        began = time.monotonic()
        deadline = began + self.max_wait_s
        while self._others(workspace):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                break
        waited = time.monotonic() - began
        BACKGROUND_WAIT_SECONDS.labels(stage).inc(waited)
        return waited

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
