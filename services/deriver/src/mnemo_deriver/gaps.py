"""Messages the deriver let go of past a workspace's share of its hold, read again later. Pure.

A partition's durable delivers at most ``max_ack_pending`` messages unacknowledged, and the
deriver holds each until it is derived. A workspace whose backlog filled that would keep every
other workspace of its partition from being delivered until enough of the backlog was derived.
So one workspace holds at most its ``share``: past it, its later deliveries are acknowledged
without being held -- *let go* -- once a record of where its **gap** begins is kept, and they
are read again from the log (a consumer filtered to that workspace) as its held messages are
derived, in order, each taken once.

The record says where a re-read after a crash begins: the oldest message read again and not yet
derived, or the next one to read. It moves on as they are derived and is dropped once nothing of
the gap is left; whoever takes the partition over reads again from each record of it.

Once a gap's re-read has passed every message let go, the gap closes: the workspace's later
messages are held from the durable again, and a delivery of one at or before the point the
re-read reached (``read_through``) is acknowledged without being held (it was read again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

# What to do with a message a re-read delivered: hold it, or pass it over (a re-read stopped
# since, a message it delivered before, or one past the gap, which the durable delivers).
Verdict = Literal["take", "skip", "full"]


@dataclass
class Gap:
    """One workspace's messages let go and not all derived yet."""

    partition: int
    # The next position to read again from: every message let go before it was read again.
    start: int
    # The newest message let go by this replica.
    let_go: int = 0
    # Taken over: the previous owner may have let go of messages up to here (the durable's ack
    # floor; the durable delivers everything after it again).
    bound: int = 0
    # Messages read again, held, not yet derived.
    unsettled: set[int] = field(default_factory=set)
    # The running re-read's number (0: none running).
    reading: int = 0
    # Whether messages let go remain to be read again.
    open: bool = True
    # The position its record says (None: no record kept).
    kept: int | None = None

    @property
    def position(self) -> int | None:
        """Where a re-read after a crash must begin; None once nothing is left."""
        if self.open:
            return min(self.unsettled, default=self.start)
        return min(self.unsettled) if self.unsettled else None

    @property
    def end(self) -> int:
        """The newest message that may have been let go."""
        return max(self.let_go, self.bound)


class Gaps:
    """The gaps of the workspaces of the partitions this replica reads."""

    def __init__(self, share: int) -> None:
        self.share = share
        self._gaps: dict[str, Gap] = {}
        # workspace -> its partition and the position its closed gap's re-read reached (every
        # message of it up to there was read again, or held before the gap)
        self._read_through: dict[str, tuple[int, int]] = {}
        self._readings = 0

    def __bool__(self) -> bool:
        return bool(self._gaps)

    def __len__(self) -> int:
        return len(self._gaps)

    def items(self) -> list[tuple[str, Gap]]:
        return list(self._gaps.items())

    def of(self, workspace: str) -> Gap | None:
        return self._gaps.get(workspace)

    def lets_go(self, workspace: str, seq: int, held: int) -> bool:
        """Whether a delivery from the durable of ``workspace`` (``held`` of its messages held)
        is let go rather than held."""
        gap = self._gaps.get(workspace)
        if gap is not None and gap.open:
            return True
        return held >= self.share or seq <= self._through(workspace)

    def read_through(self, workspace: str, seq: int) -> bool:
        """Whether a closed gap's re-read of ``workspace`` passed ``seq``."""
        return seq <= self._through(workspace)

    def needs_record(self, workspace: str, seq: int) -> bool:
        """Whether letting go of ``seq`` opens a gap (its record kept first)."""
        gap = self._gaps.get(workspace)
        if gap is not None and gap.open:
            return False
        return seq > self._through(workspace)

    def open(self, workspace: str, partition: int, seq: int) -> Gap:
        """A gap from ``seq`` on (what is still unsettled of a closed one is kept)."""
        gap = self._gaps.get(workspace)
        if gap is None:
            gap = self._gaps[workspace] = Gap(partition, seq)
        else:
            gap.open, gap.start, gap.bound, gap.reading = True, seq, 0, 0
        gap.let_go = max(gap.let_go, seq)
        return gap

    def resume(self, workspace: str, partition: int, recorded: int, floor: int) -> Gap:
        """A gap recorded by a previous owner, whose durable starts again after ``floor``:
        read again from the record (or from after the floor, if that is older); what came after
        the floor is delivered again and let go."""
        gap = self._gaps[workspace] = Gap(partition, min(recorded, floor + 1), bound=floor)
        gap.kept = recorded
        if gap.start > gap.end:
            self._close(workspace, gap)
        return gap

    def let_go(self, workspace: str, seq: int) -> None:
        """``seq`` of an open gap's workspace was let go."""
        gap = self._gaps[workspace]
        gap.let_go = max(gap.let_go, seq)

    def begin(self, workspace: str) -> int:
        """A re-read of ``workspace``'s gap starts (from ``start``): its number."""
        self._readings += 1
        self._gaps[workspace].reading = self._readings
        return self._readings

    def read_again(self, workspace: str, reading: int, seq: int, held: int) -> Verdict:
        """What to do with ``seq``, delivered by re-read ``reading`` while ``held`` of the
        workspace's messages are held. A re-read past its share stops (``full``) and begins
        again from ``start`` once there is room."""
        gap = self._gaps.get(workspace)
        if gap is None or not gap.open or gap.reading != reading or seq < gap.start:
            return "skip"
        if seq > gap.end:
            self._close(workspace, gap)  # nothing of the workspace between: all was read
            return "skip"
        if held >= self.share:
            gap.reading = 0
            return "full"
        gap.start = seq + 1
        gap.unsettled.add(seq)
        if gap.start > gap.end:
            self._close(workspace, gap)
        return "take"

    def nothing_left(self, workspace: str, let_go: int) -> bool:
        """The log holds no message of the workspace from its gap's ``start`` on (what was let
        go was erased since), and nothing was let go since it was asked (``let_go`` then):
        close the gap. Whether it closed."""
        gap = self._gaps.get(workspace)
        if gap is None or not gap.open or gap.let_go != let_go:
            return False
        self._close(workspace, gap)
        return True

    def settled(self, workspace: str, seq: int) -> None:
        """A message read again is derived."""
        gap = self._gaps.get(workspace)
        if gap is not None:
            gap.unsettled.discard(seq)

    def recorded(self, workspace: str, position: int | None) -> None:
        """The store now says ``position`` for ``workspace`` (None: no record); a gap with
        nothing left and no record is forgotten."""
        gap = self._gaps.get(workspace)
        if gap is None:
            return
        gap.kept = position
        if position is None and gap.position is None:
            del self._gaps[workspace]

    def changed(self) -> list[tuple[str, Gap, int | None]]:
        """The gaps whose record is to be written (a position) or dropped (None)."""
        return [(w, g, g.position) for w, g in self._gaps.items() if g.position != g.kept]

    def forget(self, partition: int) -> list[str]:
        """Let go of the gaps of ``partition`` (handed over; their records stay): their
        workspaces."""
        gone = [w for w, g in self._gaps.items() if g.partition == partition]
        for w in gone:
            del self._gaps[w]
        self._read_through = {w: t for w, t in self._read_through.items() if t[0] != partition}
        return gone

    def _through(self, workspace: str) -> int:
        through = self._read_through.get(workspace)
        return through[1] if through is not None else 0

    def _close(self, workspace: str, gap: Gap) -> None:
        gap.open = False
        gap.reading = 0
        self._read_through[workspace] = (
            gap.partition,
            max(self._through(workspace), gap.start - 1),
        )
