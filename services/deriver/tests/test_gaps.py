"""A workspace's messages let go past its share, and read again: the pure rules."""

from __future__ import annotations

from mnemo_deriver.gaps import Gap, Gaps


def _gap(gaps: Gaps, workspace: str) -> Gap:
    gap = gaps.of(workspace)
    assert gap is not None
    return gap


def test_a_workspace_is_let_go_of_past_its_share_and_only_the_first_needs_a_record() -> None:
    gaps = Gaps(share=3)
    assert not gaps.lets_go("a", 10, held=2)
    assert gaps.lets_go("a", 11, held=3)
    assert gaps.needs_record("a", 11)
    gaps.open("a", 0, 11)
    # Open: every later delivery is let go, whatever is held, with no new record.
    assert gaps.lets_go("a", 12, held=0)
    assert not gaps.needs_record("a", 12)
    gaps.let_go("a", 12)
    assert _gap(gaps, "a").end == 12
    # Another workspace is not concerned.
    assert not gaps.lets_go("b", 13, held=0)


def test_a_reread_takes_in_order_once_and_closes_past_what_was_let_go() -> None:
    gaps = Gaps(share=3)
    gaps.open("a", 0, 11)
    gaps.let_go("a", 15)
    reading = gaps.begin("a")
    assert gaps.read_again("a", reading, 11, held=0) == "take"
    assert gaps.read_again("a", reading, 11, held=1) == "skip"  # delivered before
    assert gaps.read_again("a", reading + 1, 13, held=1) == "skip"  # not the running re-read
    assert gaps.read_again("a", reading, 13, held=1) == "take"
    assert _gap(gaps, "a").position == 11
    assert gaps.read_again("a", reading, 15, held=2) == "take"
    gap = gaps.of("a")
    assert gap is not None and not gap.open and gap.unsettled == {11, 13, 15}
    # Closed: held again from the durable, but what the re-read passed is not held twice.
    assert gaps.lets_go("a", 15, held=0)
    assert not gaps.needs_record("a", 15)
    assert not gaps.lets_go("a", 16, held=0)


def test_a_message_past_the_gap_closes_it_and_is_left_to_the_durable() -> None:
    gaps = Gaps(share=3)
    gaps.open("a", 0, 11)
    reading = gaps.begin("a")
    assert gaps.read_again("a", reading, 11, held=0) == "take"
    # 11 was all that was let go when 14 arrives by the re-read first: 14 is the durable's.
    assert gaps.read_again("a", reading, 14, held=1) == "skip"
    assert not _gap(gaps, "a").open
    assert not gaps.lets_go("a", 14, held=1)


def test_a_reread_stops_at_the_share_and_begins_again_where_it_stopped() -> None:
    gaps = Gaps(share=2)
    gaps.open("a", 0, 11)
    gaps.let_go("a", 20)
    reading = gaps.begin("a")
    assert gaps.read_again("a", reading, 11, held=1) == "take"
    assert gaps.read_again("a", reading, 12, held=2) == "full"
    gap = gaps.of("a")
    assert gap is not None and gap.open and gap.reading == 0 and gap.start == 12
    again = gaps.begin("a")
    assert gaps.read_again("a", reading, 12, held=0) == "skip"  # the stopped one
    assert gaps.read_again("a", again, 12, held=0) == "take"


def test_the_record_follows_what_is_derived_and_is_dropped_when_nothing_is_left() -> None:
    gaps = Gaps(share=3)
    gaps.open("a", 4, 11).kept = 11
    gaps.let_go("a", 13)
    reading = gaps.begin("a")
    assert gaps.changed() == []
    for seq in (11, 12):
        gaps.read_again("a", reading, seq, held=0)
    gaps.settled("a", 11)
    [(workspace, gap, position)] = gaps.changed()
    assert (workspace, gap.partition, position) == ("a", 4, 12)
    gaps.recorded("a", 12)
    gaps.settled("a", 12)
    assert [p for _, _, p in gaps.changed()] == [13]  # the next to read
    gaps.read_again("a", reading, 13, held=0)
    gaps.settled("a", 13)
    assert [p for _, _, p in gaps.changed()] == [None]
    gaps.recorded("a", None)
    assert gaps.of("a") is None


def test_a_closed_gap_with_work_left_opens_again_keeping_it() -> None:
    gaps = Gaps(share=1)
    gaps.open("a", 0, 5)
    reading = gaps.begin("a")
    assert gaps.read_again("a", reading, 5, held=0) == "take"  # closed, 5 unsettled
    assert gaps.lets_go("a", 8, held=1) and gaps.needs_record("a", 8)
    gap = gaps.open("a", 0, 8)
    assert gap.open and gap.unsettled == {5} and gap.position == 5


def test_nothing_left_closes_only_if_nothing_was_let_go_meanwhile() -> None:
    gaps = Gaps(share=1)
    gaps.open("a", 0, 5)
    gaps.let_go("a", 6)
    asked_at = _gap(gaps, "a").let_go
    gaps.let_go("a", 9)  # let go while the log was asked
    assert not gaps.nothing_left("a", asked_at)
    assert _gap(gaps, "a").open
    assert gaps.nothing_left("a", 9)
    assert not _gap(gaps, "a").open


def test_a_gap_taken_over_reads_again_from_the_record_or_the_durables_floor() -> None:
    gaps = Gaps(share=3)
    # Recorded before the floor: read again from the record up to the floor at least.
    gap = gaps.resume("a", 2, recorded=40, floor=90)
    assert gap.open and gap.start == 40 and gap.end == 90 and gap.kept == 40
    reading = gaps.begin("a")
    assert gaps.read_again("a", reading, 90, held=0) == "take"
    assert not gap.open
    # Recorded after the floor: the durable delivers all of it again; nothing to read.
    other = gaps.resume("b", 2, recorded=95, floor=90)
    assert not other.open and other.position is None
    assert not gaps.lets_go("b", 95, held=0)


def test_a_partition_handed_over_is_forgotten() -> None:
    gaps = Gaps(share=1)
    gaps.open("a", 1, 5)
    gaps.open("b", 2, 6)
    reading = gaps.begin("b")
    gaps.read_again("b", reading, 6, held=0)  # b closed: 6 read through
    assert gaps.forget(2) == ["b"]
    assert gaps.of("b") is None and gaps.of("a") is not None
    assert not gaps.lets_go("b", 6, held=0)  # the next owner decides
