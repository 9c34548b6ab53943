"""A stream position that only moves forward, and waiting until it reaches a given one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable


class Position:
    """``value``: the newest stream position seen; ``wait`` until it reaches another.

    ``poll``, if given, is called every ``poll_s`` while waiting: where announcements of the
    position may be lost, it reads the position again.
    """

    def __init__(
        self, poll: Callable[[], Awaitable[object]] | None = None, poll_s: float = 0.1
    ) -> None:
        self.value = 0
        self._changed = asyncio.Event()
        self._poll = poll
        self._poll_s = poll_s

    def advance(self, seq: int) -> None:
        """Move to ``seq`` if it is ahead, waking the waiters."""
        if seq > self.value:
            self.value = seq
            self._changed.set()
            self._changed = asyncio.Event()

    async def wait(self, seq: int, timeout: float) -> bool:
        """True once position ``seq`` is reached; False if ``timeout`` passes first."""
        poll = self._poll
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.value < seq:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                step = remaining if poll is None else min(remaining, self._poll_s)
                await asyncio.wait_for(changed.wait(), step)
            if self.value < seq and poll is not None:
                await poll()
        return True
