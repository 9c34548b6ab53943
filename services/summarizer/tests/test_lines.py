"""The summaries due, per session (``Lines``): found by their message, taken in turns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from mnemo_runtime.work import Delivery
from mnemo_summarizer.cadence import Cadence, SessionLog, Turn
from mnemo_summarizer.lines import Due, Lines, SessionKey

AT = datetime(2026, 1, 1, tzinfo=UTC)


def due(seq: int) -> Due:
    """A due message at ``seq``; the lines look at nothing of it but its position."""
    turn = Turn(seq, f"m{seq}", "ann", "hello", AT)
    return Due(cast(Delivery, None), turn, [], SessionLog(Cadence(), {}, seq - 1))


def seqs(lines: Lines, key: SessionKey) -> list[int]:
    """The seqs of ``key``'s line, head first, by writing each head in turn."""
    out = []
    while (head := lines.head(key)) is not None:
        out.append(head.turn.seq)
        lines.finished(key)
    return out


def test_a_due_message_is_found_by_its_seq_and_the_line_keeps_the_log_order() -> None:
    lines, key = Lines(), ("w", "s")
    for seq in (3, 8, 21, 40):
        lines.put(key, due(seq))
    found = lines.find(key, 21)
    assert found is not None and found.turn.seq == 21
    assert lines.find(key, 22) is None and lines.find(("w", "other"), 21) is None
    assert lines.waiting(key) and not lines.waiting(("w", "other"))
    assert len(lines) == 4
    assert seqs(lines, key) == [3, 8, 21, 40]
    assert len(lines) == 0 and not lines.waiting(key) and lines.find(key, 40) is None


def test_a_session_far_behind_is_counted_and_found_through_thousands() -> None:
    lines, key = Lines(), ("w", "s")
    for seq in range(1, 20_001, 20):
        lines.put(key, due(seq))
    assert len(lines) == 1_000
    # The line's middle and its end are found; a message between them is not due.
    assert lines.find(key, 10_001) is not None and lines.find(key, 19_981) is not None
    assert lines.find(key, 10_002) is None
    taken = lines.take()
    assert taken is not None and taken[0] == key and taken[1].turn.seq == 1
    lines.finished(key)
    assert len(lines) == 999 and lines.find(key, 1) is None


def test_workspaces_take_turns_and_a_session_writes_one_at_a_time() -> None:
    lines = Lines()
    a1, a2, b1 = ("a", "1"), ("a", "2"), ("b", "1")
    for key, first in ((a1, 10), (a2, 20), (b1, 30)):
        lines.put(key, due(first))
        lines.put(key, due(first + 100))
    order = []
    while (taken := lines.take()) is not None:
        order.append(taken[0])
    # One of each session, the workspaces alternating; none twice while its head is written.
    assert order == [a1, b1, a2]
    lines.finished(a1)
    taken = lines.take()
    assert taken is not None and taken[0] == a1 and taken[1].turn.seq == 110
    assert lines.take() is None


def test_dropped_sessions_give_back_what_waited_and_leave_the_count() -> None:
    lines = Lines()
    for key, first in ((("a", "1"), 1), (("a", "2"), 2), (("b", "1"), 3)):
        for seq in (first, first + 10):
            lines.put(key, due(seq))
    gone = lines.drop(lambda key: key[0] != "a")
    assert sorted(d.turn.seq for d in gone) == [1, 2, 11, 12]
    assert len(lines) == 2
    taken = lines.take()
    assert taken is not None and taken[0] == ("b", "1")
    assert lines.take() is None


def test_a_due_put_again_at_its_seq_is_not_counted_twice() -> None:
    lines, key = Lines(), ("w", "s")
    lines.put(key, due(5))
    again = due(5)
    lines.put(key, again)
    assert len(lines) == 1 and lines.find(key, 5) is again
