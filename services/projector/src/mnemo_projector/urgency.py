"""Which batches of a projection someone is waiting for. Pure.

A workspace whose messages and their observations come a few at a time is a conversation:
its batch is applied as foreground work (``mnemo_runtime.precedence``), ahead of the backlogs
of the process. A workspace with events still waiting, or with many applied in the last
``window_s``, is a backlog: its batches are background steps. So is what nobody waits on as it
is applied: a dream's conclusions, summaries, cards, deletions.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from mnemo_schema.events import Event, MessagePosted
from mnemo_schema.observations import ObservationWritten


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

    def _forget(self, now: float) -> None:
        """Drop the workspaces with nothing in the window."""
        for ws in [w for w, r in self._applied.items() if not r or now - r[-1][0] > self.window_s]:
            del self._applied[ws]
