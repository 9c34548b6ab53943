"""The deriver service past a workspace's share of its hold, with fakes at its ports: what it
lets go of is read again and derived once, in order, and a neighbour is not held back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from mnemo_deriver.local import local_deriver
from mnemo_deriver.rereads import Rereads
from mnemo_deriver.service import DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_schema.events import MessagePosted
from mnemo_schema.observations import ObservationWritten

from .conftest import Lines, Log, MemoryLog, Records, Reread
from .test_service import Dead, Settled, Turns, posted


def _service(log: MemoryLog, records: Records, share: int) -> tuple[DeriverService, Log, Reread]:
    out = Log()
    reread = Reread(log)
    svc = DeriverService(
        DeriverSettings(workspace_share=share, retry_delay_s=0.01),
        local_deriver(),
        out,
        Dead(),
        Lines(),
        Turns(),
        rereads=Rereads(share, records, reread),
    )
    return svc, out, reread


def _said(i: int, ws: str) -> MessagePosted:
    return posted(i, "ann", f"I like tea number {i}.", [("ann", "ann")], ws=ws)


def _appended(log: MemoryLog, n: int) -> list[tuple[int, MessagePosted]]:
    """``n`` messages of workspace ``a`` appended to ``log``, each with its position."""
    return [(log.append(e := _said(i, "a")), e) for i in range(1, n + 1)]


def _derived(out: Log, ws: str) -> list[int]:
    """The messages each observation of ``ws`` cites, in the order they were published."""
    return [
        s
        for e in out.events
        if isinstance(e, ObservationWritten) and e.workspace == ws
        for s in e.source_message_seqs
    ]


async def _drive(svc: DeriverService, done: Callable[[], bool], timeout: float = 10.0) -> None:
    """Tick and tend the service, as its bus adapter does, until ``done``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the work did not finish in time"
        svc.tick()
        await svc.tend()
        await asyncio.sleep(0.005)
    await svc.flush()


async def test_a_backlog_past_its_share_is_read_again_once_in_order_behind_no_neighbour() -> None:
    log, records = MemoryLog(), Records()
    svc, out, reread = _service(log, records, share=4)
    durable = Settled()
    a = _appended(log, 20)
    b_seq = log.append(b := _said(99, "b"))
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a])
    await svc.deliver(0, [durable.delivery(b_seq, b)])
    # Four of a's held; the rest acknowledged at once, its gap recorded first; b held.
    assert svc.held.count("a") == 4 and svc.held.count("b") == 1
    assert sorted(durable.acked) == [s for s, _ in a[4:]]
    assert records.rows == {"a": (0, a[4][0])}

    await _drive(svc, lambda: len(_derived(out, "a")) == 20 and not records.rows)
    # Every message of a derived once, in order, whichever way it came; b among the first.
    assert _derived(out, "a") == [s for s, _ in a]
    assert _derived(out, "b") == [b_seq]
    first_b = next(i for i, e in enumerate(out.events) if getattr(e, "workspace", "") == "b")
    firsts_a = [i for i, e in enumerate(out.events) if isinstance(e, ObservationWritten)][:8]
    assert first_b < firsts_a[-1]
    # Read again in turns of at most the share, from where each stopped.
    assert len(reread.started) >= 2 and reread.started[0] == ("a", a[4][0])
    assert sorted(durable.acked) == sorted([s for s, _ in a] + [b_seq])
    # Delivered again by the durable after all that: nothing is held or derived twice.
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a[10:12]])
    assert svc.held.count("a") == 0


async def test_a_replica_taking_over_reads_again_from_the_record_and_derives_the_rest_once() -> (
    None
):
    log, records = MemoryLog(), Records()
    first, out1, _ = _service(log, records, share=4)
    durable = Settled()
    a = _appended(log, 20)
    await first.deliver(0, [durable.delivery(s, e) for s, e in a])
    # The first replica derives what it holds and some of what it reads again, then dies.
    await _drive(first, lambda: len(_derived(out1, "a")) >= 8)
    assert first.rereads is not None
    await first.rereads.record()
    kept = records.rows["a"][1]
    assert a[4][0] < kept <= a[-1][0]
    derived_before = set(_derived(out1, "a"))

    # The next owner: its durable starts again after the ack floor (every message acked, the
    # held ones as derived and the rest as let go).
    second, out2, _ = _service(log, records, share=4)
    floor = a[-1][0]
    await second.resume(0, floor)
    await _drive(second, lambda: not records.rows)
    again = _derived(out2, "a")
    # From the record on, in order; nothing let go is lost, nothing before it derived twice.
    assert again == [s for s, _ in a if s >= kept]
    assert derived_before | set(again) == {s for s, _ in a}


async def test_an_erased_backlog_leaves_no_gap_behind() -> None:
    log, records = MemoryLog(), Records()
    svc, out, _ = _service(log, records, share=2)
    durable = Settled()
    a = _appended(log, 10)
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a])
    assert "a" in records.rows
    log.erase("a")  # the workspace is deleted: its messages leave the log
    await _drive(svc, lambda: not records.rows, timeout=15)
    assert svc.rereads is not None and svc.rereads.gaps.of("a") is None
    assert set(_derived(out, "a")) <= {s for s, _ in a}


class _Away(Records):
    async def keep(self, workspace: str, partition: int, position: int) -> None:
        raise OSError("the database is away")


async def test_with_no_record_kept_nothing_is_let_go() -> None:
    log = MemoryLog()
    svc, _, _ = _service(log, _Away(), share=2)
    durable = Settled()
    a = _appended(log, 5)
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a])
    # Held, as without a share: the durable's own limit bounds them.
    assert svc.held.count("a") == 5 and durable.acked == []


async def test_a_gap_opened_again_keeps_in_its_record_what_is_read_and_not_yet_derived() -> None:
    log, records = MemoryLog(), Records()
    svc, _, _ = _service(log, records, share=1)
    assert svc.rereads is not None
    gaps = svc.rereads.gaps
    durable = Settled()
    a = _appended(log, 4)
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a[:2]])  # 1 held, 2 let go
    reading = gaps.begin("a")
    assert gaps.read_again("a", reading, a[1][0], held=0) == "take"  # closed, 2 not derived
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a[2:3]])  # past the share again
    assert records.rows["a"] == (0, a[1][0])


async def test_a_workspace_let_go_is_acknowledged_unread_and_still_derived_once() -> None:
    log, records = MemoryLog(), Records()
    svc, out, _ = _service(log, records, share=4)
    durable = Settled()
    a = _appended(log, 20)
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a[:5]])  # 4 held, a gap at the 5th
    # The rest of a is not even decoded: the feed acknowledges what is not wanted.
    assert not [s for s, _ in a[5:] if svc.wanted("mnemo.evt.a.0.msg.s", s)]
    assert svc.wanted("mnemo.evt.b.0.msg.s", 99)
    assert svc.wanted("mnemo.evt.a.0.msg.s", a[0][0])  # held: its redelivery is looked at
    await _drive(svc, lambda: len(_derived(out, "a")) == 20 and not records.rows)
    assert _derived(out, "a") == [s for s, _ in a]


async def test_a_partition_handed_over_stops_its_rereads_and_keeps_their_record() -> None:
    log, records = MemoryLog(), Records()
    svc, out, reread = _service(log, records, share=2)
    durable = Settled()
    a = _appended(log, 40)
    await svc.deliver(0, [durable.delivery(s, e) for s, e in a])
    await _drive(svc, lambda: len(_derived(out, "a")) >= 6)
    await svc.release(0)
    assert reread._reads == {}  # nothing read again for a partition no longer ours
    assert svc.rereads is not None and svc.rereads.gaps.of("a") is None
    derived = set(_derived(out, "a"))
    # What the record says is not derived yet is all that is left: the next owner's part.
    position = records.rows["a"][1]
    assert {s for s, _ in a if s < position} <= derived
    assert max(derived) < a[-1][0]
    # And nothing more is taken or derived here.
    published = len(out.events)
    for _ in range(20):
        svc.tick()
        await svc.tend()
        await asyncio.sleep(0.005)
    assert len(out.events) == published and len(svc.held) == 0
