"""Which events of a partition a projection applies next: one line per workspace, taken in
turns. Pure.

Nothing a projection keeps spans two workspaces, so each workspace's events need only be
applied in their own order. A projection that embeds what it applies (observations, message
passages) is slow enough for one workspace's backlog to keep a partition busy for minutes; in
log order, another workspace of that partition would wait behind all of it. Taken in turns, it
waits for at most one batch.

What is applied is then said by two numbers: the partition's **floor** (every event up to it is
applied) and, for a workspace applied past the floor, its own position (every event of that
workspace up to it is applied). An event is applied when its position is at most the floor or
at most its workspace's.

A workspace may also have a **gap**: events of it past those its line holds were let go (its
line held its share; see ``intake``) and are read again from the log later. The floor stays
below a gap, and an event that is read again is queued once.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable

from mnemo_projector.quarantine import Delivered
from mnemo_schema.subjects import workspace_of_subject


class Lines:
    """The received events not yet applied, per workspace (``fair``) or in one line."""

    def __init__(self, batch: int, *, fair: bool, floor: int, ahead: dict[str, int]) -> None:
        self._batch = batch
        self._fair = fair
        self.floor = floor
        # workspace -> its position, where it is past the floor
        self.ahead = {w: s for w, s in ahead.items() if s > floor}
        # The newest event received in log order (what was let go of into a gap included).
        self.received = floor
        self._lines: OrderedDict[str, deque[Delivered]] = OrderedDict()
        self._count = 0  # events waiting over all lines (asked for each event received)
        # workspace -> the newest of its events queued (an event read again is queued once)
        self._last: dict[str, int] = {}
        # workspace -> a position at most that of its first event not queued, while it has one
        self.gaps: dict[str, int] = {}

    def put(self, item: Delivered) -> bool:
        """Queue ``item``, received in log order, at the end of its line, unless it is
        applied or queued already; whether it was queued."""
        self.received = max(self.received, item.seq)
        return self.put_again(item)

    def put_again(self, item: Delivered) -> bool:
        """``put`` for an event read again from the log (``received`` stays)."""
        workspace = self.line_of(item)
        if item.seq <= max(self.floor, self.ahead.get(workspace, 0), self._last.get(workspace, 0)):
            return False
        self._lines.setdefault(workspace, deque()).append(item)
        self._count += 1
        self._last[workspace] = item.seq
        if workspace in self.gaps:  # read again in order: its first event not queued is later
            self.gaps[workspace] = max(self.gaps[workspace], item.seq + 1)
        return True

    def close_gap(self, workspace: str) -> None:
        """Every event of ``workspace`` received in log order is queued or applied now."""
        self.gaps.pop(workspace, None)

    def let_go(self, item: Delivered) -> None:
        """``item``, received in log order, is not queued: its workspace has a gap from it on
        (if it had none)."""
        self.received = max(self.received, item.seq)
        workspace = self.line_of(item)
        if item.seq > max(self.floor, self.ahead.get(workspace, 0), self._last.get(workspace, 0)):
            self.gaps.setdefault(workspace, item.seq)

    def last(self, workspace: str) -> int:
        """The newest event of ``workspace`` queued, or applied (0: none)."""
        return max(self.floor, self.ahead.get(workspace, 0), self._last.get(workspace, 0))

    def count(self, workspace: str) -> int:
        """How many events of ``workspace`` wait in its line."""
        line = self._lines.get(workspace)
        return len(line) if line else 0

    def line_of(self, item: Delivered) -> str:
        """The line ``item`` waits in: its workspace's, or the only one."""
        return (workspace_of_subject(item.subject) or "") if self._fair else ""

    def take(self, limit: int | None = None) -> tuple[str, list[Delivered]]:
        """The next batch: up to ``batch`` events (and ``limit``) of the line whose turn it is,
        in order."""
        if not self._lines:
            return "", []
        workspace, line = next(iter(self._lines.items()))
        size = self._batch if limit is None else max(1, min(self._batch, limit))
        batch = [line.popleft() for _ in range(min(size, len(line)))]
        self._count -= len(batch)
        if line:
            self._lines.move_to_end(workspace)
        else:
            del self._lines[workspace]
        return workspace, batch

    def waiting(self, workspace: str) -> bool:
        """Whether events of ``workspace`` wait in its line."""
        return workspace in self._lines

    def floor_after(self, unapplied: Iterable[Delivered] = ()) -> int:
        """The floor once what was taken is applied, but for ``unapplied``: the position before
        the oldest event still waiting, or the newest received when none waits."""
        waiting = [line[0].seq for line in self._lines.values()]
        waiting += [item.seq for item in unapplied]
        waiting += self.gaps.values()
        return min(waiting) - 1 if waiting else self.received

    def applied(self, workspace: str, seq: int, floor: int) -> None:
        """Record that ``workspace``'s events up to ``seq`` are applied and the floor is
        ``floor``."""
        self.floor = floor
        if seq > floor and workspace:
            self.ahead[workspace] = seq
        else:
            self.ahead.pop(workspace, None)
        self.ahead = {w: s for w, s in self.ahead.items() if s > floor}
        self._last = {w: s for w, s in self._last.items() if s > floor}

    def __bool__(self) -> bool:
        return bool(self._lines)

    def __len__(self) -> int:
        return self._count
