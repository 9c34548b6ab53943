"""The lines of a partition's events: workspaces in turns, each in order; the floor and the
workspaces past it."""

from __future__ import annotations

from mnemo_projector.lines import Lines
from mnemo_projector.quarantine import Delivered


def _event(seq: int, workspace: str) -> Delivered:
    return Delivered(seq, f"mnemo.evt.{workspace}.0.msg.s", b"")


def _seqs(batch: list[Delivered]) -> list[int]:
    return [d.seq for d in batch]


def test_workspaces_take_turns_each_in_its_own_order() -> None:
    lines = Lines(2, fair=True, floor=0, ahead={})
    for seq in range(1, 7):
        lines.put(_event(seq, "a"))
    lines.put(_event(7, "b"))
    lines.put(_event(8, "a"))
    assert lines.take() == ("a", [_event(1, "a"), _event(2, "a")])
    assert lines.take() == ("b", [_event(7, "b")])
    assert [_seqs(lines.take()[1]) for _ in range(3)] == [[3, 4], [5, 6], [8]]
    assert lines.take() == ("", [])


def test_the_floor_stays_before_the_oldest_event_still_waiting() -> None:
    lines = Lines(10, fair=True, floor=0, ahead={})
    for seq, ws in [(1, "a"), (2, "a"), (3, "b"), (5, "a")]:
        lines.put(_event(seq, ws))
    workspace, batch = lines.take()  # a's 1, 2, 5
    assert lines.floor_after() == 2  # b's 3 waits
    assert lines.floor_after(batch[2:]) == 2
    lines.applied(workspace, 5, 2)
    assert lines.ahead == {"a": 5}
    workspace, _ = lines.take()
    assert lines.floor_after() == 5  # nothing waits: the newest received
    lines.applied(workspace, 3, 5)
    assert (lines.floor, lines.ahead) == (5, {})


def test_what_a_workspace_applied_past_the_floor_is_not_queued_again() -> None:
    lines = Lines(10, fair=True, floor=2, ahead={"b": 4, "c": 1})
    assert lines.ahead == {"b": 4}  # c's position is below the floor: nothing to remember
    for seq, ws in [(2, "a"), (3, "a"), (4, "b"), (5, "b")]:
        lines.put(_event(seq, ws))
    assert lines.take() == ("a", [_event(3, "a")])
    assert lines.take() == ("b", [_event(5, "b")])
    assert lines.received == 5


def test_one_line_keeps_the_partitions_log_order() -> None:
    lines = Lines(3, fair=False, floor=0, ahead={"a": 9})
    for seq, ws in [(1, "a"), (2, "b"), (3, "a"), (4, "b")]:
        lines.put(_event(seq, ws))
    assert lines.take() == ("", [_event(1, "a"), _event(2, "b"), _event(3, "a")])
    assert lines.floor_after() == 3
    assert _seqs(lines.take()[1]) == [4]


def test_a_limit_shortens_the_turn_never_below_one_event() -> None:
    lines = Lines(8, fair=True, floor=0, ahead={})
    for seq in range(1, 21):
        lines.put(_event(seq, "a"))
    assert _seqs(lines.take(3)[1]) == [1, 2, 3]
    assert _seqs(lines.take(0)[1]) == [4]
    assert _seqs(lines.take(100)[1]) == list(range(5, 13))  # at most the batch size


def test_a_gap_keeps_the_floor_below_it_until_its_events_are_read_again_once() -> None:
    lines = Lines(10, fair=True, floor=0, ahead={})
    lines.put(_event(1, "a"))
    lines.let_go(_event(2, "a"))  # a's line held its share: 2 and 4 are let go
    lines.put(_event(3, "b"))
    lines.let_go(_event(4, "a"))
    assert lines.gaps == {"a": 2} and lines.received == 4
    for expected in ("a", "b"):
        workspace, batch = lines.take()
        assert workspace == expected
        lines.applied(workspace, batch[-1].seq, lines.floor_after())
    assert lines.floor == 1 and lines.ahead == {"b": 3}  # not past a's first event let go
    # Read again from the gap: each once, the gap following what is queued.
    assert lines.put_again(_event(2, "a")) and lines.gaps == {"a": 3}
    assert not lines.put_again(_event(2, "a"))
    assert lines.put_again(_event(4, "a")) and lines.last("a") == 4
    lines.close_gap("a")
    assert not lines.put(_event(4, "a"))  # the log's own delivery of it, later: queued already
    workspace, batch = lines.take()
    assert _seqs(batch) == [2, 4]
    lines.applied(workspace, 4, lines.floor_after())
    assert lines.floor == 4 and lines.ahead == {} and lines.received == 4


def test_an_event_applied_or_queued_already_makes_no_gap() -> None:
    lines = Lines(10, fair=True, floor=5, ahead={"a": 9})
    lines.let_go(_event(8, "a"))
    lines.put(_event(11, "a"))
    lines.let_go(_event(11, "a"))
    assert lines.gaps == {}
    lines.let_go(_event(12, "a"))
    assert lines.gaps == {"a": 12} and lines.count("a") == 1 and lines.count("b") == 0


def test_the_count_of_events_waiting_follows_what_is_queued_and_taken() -> None:
    lines = Lines(3, fair=True, floor=0, ahead={})
    for seq in range(1, 6):
        lines.put(_event(seq, "a" if seq % 2 else "b"))
    lines.put(_event(4, "b"))  # queued already: not counted again
    lines.let_go(_event(6, "c"))  # let go: not waiting
    assert len(lines) == 5 and lines.count("a") == 3 and lines.count("b") == 2
    assert _seqs(lines.take()[1]) == [1, 3, 5]
    assert len(lines) == 2
    assert lines.put_again(_event(6, "c"))  # read again: waits now
    assert len(lines) == 3
    while lines.take()[1]:
        pass
    assert len(lines) == 0 and not lines
