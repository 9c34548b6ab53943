"""Summaries due, one line per session, taken with the workspaces in turns. Pure.

Counting a message is cheap and is done as it is delivered; a summary is a model call. A
message whose count completes a summary waits in its session's line (unacknowledged) while
later messages, of its session and of every other, are counted. A session's summaries are
written one at a time and in order, since each builds on the previous one of its type; the
sessions share the summarizer's slots, the workspaces taking turns, so one workspace's backlog
of summaries holds back no other workspace's messages.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import Job, SessionLog, Turn

SessionKey = tuple[str, str]


@dataclass
class Due:
    """A counted message and the summaries its count completed, written in order before it is
    settled."""

    delivery: Delivery
    turn: Turn
    jobs: list[Job]
    # The session's state: a job's previous summary is the one its type has when it runs.
    state: SessionLog
    written: dict[SummaryType, str | None] = field(default_factory=dict)
    summary_seq: int = 0
    # Failures of its own since it was delivered (an outage does not count).
    failures: int = 0

    @property
    def cause(self) -> MessagePosted:
        return self.delivery.event


class Lines:
    """The summaries due, per session; which session writes next."""

    def __init__(self) -> None:
        self._lines: dict[SessionKey, deque[Due]] = {}
        self._busy: set[SessionKey] = set()
        # workspace -> its sessions with a summary due and none being written, in turn order
        self._ready: OrderedDict[str, deque[SessionKey]] = OrderedDict()

    def put(self, key: SessionKey, due: Due) -> None:
        self._lines.setdefault(key, deque()).append(due)
        self._mark_ready(key)

    def waiting(self, key: SessionKey) -> bool:
        """Whether summaries of ``key`` are due (being written or waiting)."""
        return key in self._lines

    def head(self, key: SessionKey) -> Due | None:
        line = self._lines.get(key)
        return line[0] if line else None

    def find(self, key: SessionKey, seq: int) -> Due | None:
        """The due message at ``seq`` of ``key``, if it waits."""
        return next((d for d in self._lines.get(key, ()) if d.turn.seq == seq), None)

    def take(self) -> tuple[SessionKey, Due] | None:
        """The head of the line whose turn it is, its session then busy; None if none waits."""
        for workspace in list(self._ready):
            sessions = self._ready[workspace]
            while sessions:
                key = sessions.popleft()
                line = self._lines.get(key)
                if line and key not in self._busy:
                    if sessions:
                        self._ready.move_to_end(workspace)
                    else:
                        del self._ready[workspace]
                    self._busy.add(key)
                    return key, line[0]
            del self._ready[workspace]
        return None

    def finished(self, key: SessionKey) -> None:
        """The head of ``key``'s line is settled: the next may be taken."""
        line = self._lines.get(key)
        if line:
            line.popleft()
            if not line:
                del self._lines[key]
        self.resume(key)

    def pause(self, key: SessionKey) -> None:
        """``key``'s head is to be tried again later: busy until ``resume``."""
        self._busy.add(key)

    def resume(self, key: SessionKey) -> None:
        self._busy.discard(key)
        self._mark_ready(key)

    def drop(self, keep: Callable[[SessionKey], bool]) -> list[Due]:
        """Remove the lines of the sessions ``keep`` rejects; what waited in them."""
        gone = [k for k in self._lines if not keep(k)]
        out = [d for k in gone for d in self._lines.pop(k)]
        self._busy = {k for k in self._busy if keep(k)}
        for workspace in list(self._ready):
            left = deque(k for k in self._ready[workspace] if keep(k))
            if left:
                self._ready[workspace] = left
            else:
                del self._ready[workspace]
        return out

    def __len__(self) -> int:
        return sum(len(line) for line in self._lines.values())

    def _mark_ready(self, key: SessionKey) -> None:
        if key in self._busy or key not in self._lines:
            return
        sessions = self._ready.setdefault(key[0], deque())
        if key not in sessions:
            sessions.append(key)
