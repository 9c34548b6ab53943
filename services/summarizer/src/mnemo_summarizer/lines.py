"""Summaries due, one line per session, taken with the workspaces in turns. Pure.

Counting a message is cheap and is done as it is delivered; a summary is a model call. A
message whose count completes a summary waits in its session's line (unacknowledged) while
later messages, of its session and of every other, are counted. A session's summaries are
written one at a time and in order, since each builds on the previous one of its type; the
sessions share the summarizer's slots, the workspaces taking turns, so one workspace's backlog
of summaries holds back no other workspace's messages.
"""

from __future__ import annotations

from collections import OrderedDict
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
        # session -> its summaries due, by message seq in log order (found by seq as each
        # delivery is counted: a session far behind holds thousands)
        self._lines: dict[SessionKey, OrderedDict[int, Due]] = {}
        self._busy: set[SessionKey] = set()
        self._count = 0  # summaries due over all lines
        # workspace -> its sessions with a summary due and none being written, in turn order
        # (an ordered set: a workspace may have thousands)
        self._ready: OrderedDict[str, OrderedDict[SessionKey, None]] = OrderedDict()

    def put(self, key: SessionKey, due: Due) -> None:
        line = self._lines.setdefault(key, OrderedDict())
        self._count += due.turn.seq not in line
        line[due.turn.seq] = due
        self._mark_ready(key)

    def waiting(self, key: SessionKey) -> bool:
        """Whether summaries of ``key`` are due (being written or waiting)."""
        return key in self._lines

    def head(self, key: SessionKey) -> Due | None:
        line = self._lines.get(key)
        return next(iter(line.values())) if line else None

    def find(self, key: SessionKey, seq: int) -> Due | None:
        """The due message at ``seq`` of ``key``, if it waits."""
        line = self._lines.get(key)
        return line.get(seq) if line else None

    def take(self) -> tuple[SessionKey, Due] | None:
        """The head of the line whose turn it is, its session then busy; None if none waits."""
        for workspace in list(self._ready):
            sessions = self._ready[workspace]
            while sessions:
                key, _ = sessions.popitem(last=False)
                line = self._lines.get(key)
                if line and key not in self._busy:
                    if sessions:
                        self._ready.move_to_end(workspace)
                    else:
                        del self._ready[workspace]
                    self._busy.add(key)
                    return key, next(iter(line.values()))
            del self._ready[workspace]
        return None

    def finished(self, key: SessionKey) -> None:
        """The head of ``key``'s line is settled: the next may be taken."""
        line = self._lines.get(key)
        if line:
            line.popitem(last=False)
            self._count -= 1
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
        out = [d for k in gone for d in self._lines.pop(k).values()]
        self._count -= len(out)
        self._busy = {k for k in self._busy if keep(k)}
        for workspace in list(self._ready):
            left = OrderedDict.fromkeys(k for k in self._ready[workspace] if keep(k))
            if left:
                self._ready[workspace] = left
            else:
                del self._ready[workspace]
        return out

    def __len__(self) -> int:
        return self._count

    def _mark_ready(self, key: SessionKey) -> None:
        if key in self._busy or key not in self._lines:
            return
        self._ready.setdefault(key[0], OrderedDict())[key] = None
