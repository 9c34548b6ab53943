"""Which batches of a projection someone is waiting for, and applying them in that order.

A workspace whose messages and their observations come a few at a time is a conversation:
its batch is applied as foreground work (``mnemo_runtime.precedence``), ahead of the backlogs
of the process. A workspace with many events applied in the last ``window_s`` and still
waiting is a backlog: its batches are background steps. So is what nobody waits on as it
is applied: a dream's conclusions, summaries, cards, deletions. A background step waits
until what someone waits on comes in behind it, at most (see ``RecentWork.in_turn``).
``RecentWork.foreground`` and ``awaited`` are pure; ``RecentWork.in_turn`` applies a batch
under the process's precedence.
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
    deriver made of one as a conversation's (or an API caller stated)."""
    return any(
        isinstance(e, MessagePosted)
        or (isinstance(e, ObservationWritten) and e.origin != "dreamer" and not e.backlog)
        for e in events
    )


def from_backlog(events: Sequence[Event | None]) -> bool:
    """Whether the batch holds observations the deriver formed as a backlog's work."""
    return any(isinstance(e, ObservationWritten) and e.backlog for e in events)


class RecentWork:
    """Events applied per workspace over the last ``window_s`` seconds.

    ``most`` in the window is a conversation's at most: a few messages a second, each making an
    observation in every representation that observes it (two or three in a chat of two peers
    observing each other, more in a group) and now and then a summary. A backlog, or a workspace
    posted to faster than a conversation goes, makes its events by the hundred a second."""

    def __init__(self, window_s: float = 2.0, most: int = 64) -> None:
        self.window_s = window_s
        self.most = most
        self._applied: dict[str, deque[tuple[float, int]]] = {}

    def foreground(self, workspace: str, events: int, waiting: int, now: float) -> bool:
        """Record a batch of ``events`` of ``workspace`` taken at ``now``, with ``waiting`` more
        of it still in its line; whether it is foreground: at most ``most`` events of the
        workspace taken in the window, those still waiting counted with them (a conversation's
        batch cut short by the pace, its two observations taken one at a time, stays one)."""
        recent = self._applied.setdefault(workspace, deque())
        while recent and now - recent[0][0] > self.window_s:
            recent.popleft()
        recent.append((now, events))
        if len(self._applied) > 1024:
            self._forget(now)
        return waiting + sum(n for _, n in recent) <= self.most

    async def in_turn(
        self,
        stage: str,
        workspace: str,
        events: Sequence[Event | None],
        waiting: int,
        now: float,
        apply: Callable[[], Awaitable[T]],
        arrived: Callable[[bool], bool] | None = None,
    ) -> T:
        """``apply()`` the batch of ``events``: as foreground work when it is a conversation's
        that someone waits on, or that more of the conversation's events wait behind, else after
        the process's foreground work (a background step).

        A background step holds up the loop that applies it, and with it whatever comes in
        behind: a priority inversion, which reads that never stop would make last up to
        ``READS_MAX_WAIT_S`` for a conversation's next observation. So the step waits only
        until ``arrived`` says that something someone may wait on came in behind it: of any
        workspace (``arrived(True)``) for a conversation's batch that nobody waits on (its
        summary, say), of another workspace (``arrived(False)``) for a backlog's batch, whose
        own events keep coming."""
        order = precedence()
        conversation = self.foreground(workspace, len(events), waiting, now) and not (
            from_backlog(events)
        )
        # A conversation's batch with more of its events behind it holds them up (the events
        # of a session just created, then its first message): it goes as theirs would.
        if conversation and (waiting or awaited(events)):
            with order.foreground(workspace):
                return await apply()
        until = None if arrived is None else (lambda: arrived(conversation))
        await order.background_step(stage, workspace, until)
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
