"""Letting go of a workspace's messages past its share, and reading them again (``gaps``): the
records kept, the re-reads started and stopped. The deriver service calls it on each delivery
and every tick; it holds no message itself.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from mnemo_deriver.gaps import Gaps
from mnemo_deriver.held import HeldMessages
from mnemo_deriver.ports import GapRecords, Reread, Sink
from mnemo_deriver.turns import PrecedingTurns, Turn
from mnemo_runtime import metrics
from mnemo_runtime.logging import get_logger
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted
from mnemo_schema.subjects import workspace_of_subject

log = get_logger("mnemo.deriver")

# After a re-read has delivered nothing for this long, the log is asked whether anything of its
# workspace is left to read (the rest may have been erased since it was let go).
QUIET_S = 2.0
# How often the records follow what was derived: a record behind only means more is read (and
# derived) again after a crash.
RECORD_EVERY_S = 0.5

# How the deriver takes a message read again: held, into its representations' batches.
Take = Callable[[int, Delivery, Turn], Awaitable[None]]


class Rereads:
    """The gaps of the partitions this replica reads, their records and their re-reads."""

    def __init__(
        self,
        share: int,
        records: GapRecords,
        reread: Reread,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.gaps = Gaps(share)
        self._records = records
        self._reread = reread
        self._clock = clock
        self._heard: dict[str, float] = {}  # workspace -> when its re-read last delivered
        self._recorded_at = 0.0
        self._held = HeldMessages(1)
        self._take: Take | None = None
        self._turns = PrecedingTurns()  # keyed by re-read: each delivers in log order

    def attach(self, held: HeldMessages, take: Take) -> None:
        """The deriver's held messages (a workspace's count says when to read again) and how
        it takes a message read again."""
        self._held, self._take = held, take

    async def resume(self, partition: int, floor: int) -> None:
        """Take over ``partition``'s records; its durable delivers again after ``floor``."""
        for workspace, position in (await self._records.load(partition)).items():
            gap = self.gaps.resume(workspace, partition, position, floor)
            log.info("deriver.gap_resumed", workspace=workspace, position=position, open=gap.open)

    def wanted(self, subject: str, seq: int) -> bool:
        """Whether a delivery at ``seq`` on ``subject`` is to be decoded: not when its
        workspace's gap is open or the gap's re-read passed it (it is let go, acknowledged
        unread by the caller); a redelivery of a held message is."""
        if not self.gaps or self._held.get(seq) is not None:
            return True
        workspace = workspace_of_subject(subject)
        if workspace is None:
            return True
        gap = self.gaps.of(workspace)
        if gap is not None and gap.open:
            self.gaps.let_go(workspace, seq)
        elif not self.gaps.read_through(workspace, seq):
            return True
        metrics.STAGE_LET_GO.labels("deriver").inc()
        return False

    async def let_go(self, partition: int, d: Delivery, held: int) -> bool:
        """Acknowledge ``d`` without holding it if its workspace is past its share (its gap's
        record kept first); whether it was let go. A record that cannot be kept (the database
        away) leaves the message held, as without a share."""
        workspace = d.event.workspace
        if not self.gaps.lets_go(workspace, d.seq, held):
            return False
        if self.gaps.needs_record(workspace, d.seq):
            # A closed gap's messages read again and not derived yet stay in the record.
            closed = self.gaps.of(workspace)
            position = min(closed.unsettled, default=d.seq) if closed is not None else d.seq
            try:
                await self._records.keep(workspace, partition, position)
            except Exception as err:
                log.warning("deriver.gap_record_failed", workspace=workspace, error=repr(err))
                return False
            self.gaps.open(workspace, partition, d.seq).kept = position
            log.info("deriver.gap_opened", workspace=workspace, at=d.seq, held=held)
        else:
            gap = self.gaps.of(workspace)
            if gap is not None and gap.open:
                self.gaps.let_go(workspace, d.seq)
        metrics.STAGE_LET_GO.labels("deriver").inc()
        try:
            await d.ack()
        except Exception as err:  # delivered again later, and let go again
            log.warning("deriver.ack_failed", seq=d.seq, error=repr(err))
        return True

    async def _deliver_again(
        self, partition: int, workspace: str, reading: int, items: list[tuple[int, MessagePosted]]
    ) -> bool:
        """Take what re-read ``reading`` delivered; False once it is to stop (the workspace's
        share is held, or its gap is closed)."""
        assert self._take is not None
        self._heard[workspace] = self._clock()
        for seq, e in items:
            verdict = self.gaps.read_again(workspace, reading, seq, self._held.count(workspace))
            if verdict == "take":
                d = Delivery(seq, e, self._settled(workspace, seq), _no_nak)
                await self._take(partition, d, self._turns.delivered(reading, seq, e))
            gap = self.gaps.of(workspace)
            if gap is None or not gap.open or gap.reading != reading:
                self._turns.forget(reading)
                return False
        return True

    def _settled(self, workspace: str, seq: int) -> Callable[[], Awaitable[None]]:
        async def settled() -> None:
            self.gaps.settled(workspace, seq)

        return settled

    def _sink(self, partition: int, workspace: str, reading: int) -> Sink:
        return lambda items: self._deliver_again(partition, workspace, reading, items)

    async def tend(self, full: bool, leaving: Callable[[int], bool]) -> None:
        """Start the re-reads whose workspace has room (at most half its share held, and room
        overall), stop the finished, close what a quiet re-read left, follow the records."""
        for workspace, gap in self.gaps.items():
            if not gap.open or leaving(gap.partition):
                await self._reread.stop(workspace)  # nothing to read (any re-read was stopped)
                continue
            if not gap.reading:
                await self._reread.stop(workspace)
                if self._held.count(workspace) <= self.gaps.share // 2 and not full:
                    reading = self.gaps.begin(workspace)
                    self._heard[workspace] = self._clock()
                    await self._reread.start(
                        gap.partition,
                        workspace,
                        gap.start,
                        self._sink(gap.partition, workspace, reading),
                    )
            elif self._clock() - self._heard.get(workspace, 0.0) > QUIET_S:
                self._heard[workspace] = self._clock()
                let_go = gap.let_go  # a message let go while the log is asked is in it
                if not await self._reread.any_from(
                    gap.partition, workspace, gap.start
                ) and self.gaps.nothing_left(workspace, let_go):
                    log.info("deriver.gap_closed_nothing_left", workspace=workspace)
                    await self._reread.stop(workspace)
        if self._clock() - self._recorded_at >= RECORD_EVERY_S:
            self._recorded_at = self._clock()
            await self.record()
            metrics.STAGE_GAPS.labels("deriver").set(len(self.gaps))

    async def record(self) -> None:
        """Write the records that moved, drop those of gaps with nothing left."""
        for workspace, _gap, position in self.gaps.changed():
            try:
                if position is None:
                    await self._records.drop(workspace)
                else:
                    await self._records.keep(workspace, _gap.partition, position)
            except Exception as err:  # tried again at the next tick
                log.warning("deriver.gap_record_failed", workspace=workspace, error=repr(err))
                return
            self.gaps.recorded(workspace, position)
            if position is None:
                self._heard.pop(workspace, None)

    async def pause(self, partition: int) -> None:
        """``partition`` is being handed over: its re-reads stop taking messages (``tend``
        starts none while it leaves)."""
        for workspace, gap in self.gaps.items():
            if gap.partition == partition:
                gap.reading = 0
                await self._reread.stop(workspace)

    async def release(self, partition: int) -> None:
        """``partition`` is handed over: stop its re-reads, forget its gaps (their records stay
        for the next owner, brought up to date first)."""
        await self.record()
        for workspace in self.gaps.forget(partition):
            await self._reread.stop(workspace)
            self._heard.pop(workspace, None)


async def _no_nak(delay: float) -> None:
    del delay  # a message read again is not the bus's to deliver again
