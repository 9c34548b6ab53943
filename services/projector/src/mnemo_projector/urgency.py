"""Which batches of a projection someone is waiting for, and applying them in that order.

A workspace whose messages and their observations come a few at a time is a conversation:
its batch is applied as foreground work (``mnemo_runtime.precedence``), ahead of the backlogs
of the process. A workspace with events still waiting, or with many applied in the last
``window_s``, is a backlog: its batches are background steps. So is what nobody waits on as it
is applied: a dream's conclusions, summaries, cards, deletions. ``RecentWork.foreground`` and
``awaited`` are pure; ``RecentWork.in_turn`` applies a batch under the process's precedence.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from mnemo_runtime.precedence import precedence
from mnemo_schema.events import Event, MessagePosted
from mnemo_schema.observations import ObservationWritten

T = TypeVar("T")


def awaited(events: Sequence[Event | None]) -> bool:
    """Whether someone waits on the batch: it holds a posted message, or an observation the
    deriver made of one (or an API caller stated)."""
    return any(
        isinstance(e, MessagePosted)
        or (isinstance(e, ObservationWritten) and e.origin != "dreamer")
        for e in events
    )


class RecentWork:
    """Events applied per workspace over the last ``window_s`` seconds."""

    def __init__(self, window_s: float = 2.0, most: int = 16) -> None:
        self.window_s = window_s
        self.most = most
        self._applied: dict[str, deque[tuple[float, int]]] = {}

    def foreground(self, workspace: str, events: int, more_waiting: bool, now: float) -> bool:
        """Record a batch of ``events`` of ``workspace`` taken at ``now``; whether it is
        foreground: nothing more of the workspace waits and, with it, at most ``most`` events
        of the workspace were taken in the window."""
        recent = self._applied.setdefault(workspace, deque())
        while recent and now - recent[0][0] > self.window_s:
            recent.popleft()
        recent.append((now, events))
        if len(self._applied) > 1024:
            self._forget(now)
        return not more_waiting and sum(n for _, n in recent) <= self.most

    async def in_turn(
        self,
        stage: str,
        workspace: str,
        events: Sequence[Event | None],
        more_waiting: bool,
        now: float,
        apply: Callable[[], Awaitable[T]],
    ) -> T:
        """``apply()`` the batch of ``events``: as foreground work when it is a conversation's
        that someone waits on, else after the process's foreground work (a background step)."""
        order = precedence()
        if self.foreground(workspace, len(events), more_waiting, now) and awaited(events):
            with order.foreground(workspace):
                return await apply()
        await order.background_step(stage, workspace)
        return await apply()

    def _forget(self, now: float) -> None:
        """Drop the workspaces with nothing in the window."""
        for ws in [w for w, r in self._applied.items() if not r or now - r[-1][0] > self.window_s]:
            del self._applied[ws]


# A batch's time while reads are answered: a backlog's step then runs only when no read has
# been for a while, or as the one that goes ahead of reads that never stop (see precedence),
# and that one runs beside the reads.
READING_TURN_S = 0.02


class Pace:
    """How many events a batch may hold: as many as the pace of the last batches applies in
    ``turn_s`` (``READING_TURN_S`` while reads are answered), so that another workspace's turn
    comes soon and a read does not wait behind a long batch (None: no limit)."""

    def __init__(self, turn_s: float | None) -> None:
        self.turn_s = turn_s
        self.seconds_per_event: float | None = None

    def limit(self, reading: bool = False) -> int | None:
        if self.turn_s is None or self.seconds_per_event is None:
            return None
        turn = min(self.turn_s, READING_TURN_S) if reading else self.turn_s
        return max(1, int(turn / self.seconds_per_event))

    def record(self, seconds: float, events: int) -> None:
        """A batch of ``events`` took ``seconds``."""
        if events:
            pace = seconds / events
            last = self.seconds_per_event
            self.seconds_per_event = pace if last is None else 0.7 * last + 0.3 * pace
