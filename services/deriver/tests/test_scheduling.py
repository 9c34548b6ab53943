"""Fair turns between workspaces and representations; one batch at a time per representation."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_deriver.batching import Batch, Item, RepKey
from mnemo_deriver.scheduling import FairQueue
from mnemo_deriver.turns import PrecedingTurns
from mnemo_schema.events import MessagePosted


def msg(seq: int, ws: str = "w", session: str = "s", peer: str = "a") -> MessagePosted:
    return MessagePosted(
        workspace=ws,
        session_id=session,
        message_id=f"m{seq}",
        peer_id=peer,
        content="x",
        metadata={},
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        token_count=1,
    )


def batch(key: RepKey, *seqs: int) -> Batch:
    return Batch(key, 0, 0, [Item(s, msg(s, key.workspace)) for s in seqs])


A1, A2, B1 = RepKey("a", "p", "p"), RepKey("a", "q", "q"), RepKey("b", "p", "p")


def test_workspaces_then_their_representations_take_turns():
    q = FairQueue()
    for i in range(3):
        q.put(batch(A1, i))
        q.put(batch(A2, 10 + i))
    q.put(batch(B1, 20))
    taken = []
    while (b := q.take()) is not None:
        taken.append(b.key)
        q.done(b.key)
    assert taken[:3] == [A1, B1, A2]  # b's one batch goes second, not after all of a's
    assert taken.count(A1) == 3 and taken.count(A2) == 3


def _taken(q: FairQueue) -> Batch:
    """The next batch, which the test expects to be there."""
    b = q.take()
    assert b is not None
    return b


def test_a_workspace_refused_by_take_keeps_its_turn():
    q = FairQueue()
    q.put(batch(A1, 1))
    q.put(batch(A2, 2))
    q.put(batch(B1, 3))
    served = q.take(skip={"a"})
    assert served is not None and served.key == B1
    assert q.take(skip={"a"}) is None  # only a's wait
    assert [_taken(q).key, _taken(q).key] == [A1, A2]


def test_a_representation_runs_one_batch_at_a_time_in_order():
    q = FairQueue()
    q.put(batch(A1, 1))
    q.put(batch(A1, 2))
    first = q.take()
    assert first is not None and first.items[0].seq == 1
    assert q.take() is None  # its next batch waits for the first to finish
    q.put(batch(A1, 0), front=True)  # a retry goes back to the head of the line
    q.done(A1)
    assert _taken(q).items[0].seq == 0


def test_dropping_a_partitions_lines_forgets_waiting_and_busy_ones():
    q = FairQueue()
    q.put(batch(A1, 1))
    q.put(batch(B1, 2))
    assert q.take() is not None  # a's line is busy now
    q.drop(lambda k: k.workspace != "a")
    q.put(batch(A1, 3))
    keys = {_taken(q).key, _taken(q).key}
    assert keys == {A1, B1}


def test_the_batches_waiting_and_each_workspaces_lines_are_counted_through_puts_takes_and_drops():
    q = FairQueue()
    assert len(q) == 0 and not q.waiting("a")
    for b in (batch(A1, 1), batch(A1, 2), batch(A2, 3), batch(B1, 4)):
        q.put(b)
    assert len(q) == 4 and q.waiting("a") and q.waiting("b") and not q.waiting("c")
    taken = _taken(q)  # a's first line, A1: its other batch still waits
    assert taken.key == A1 and len(q) == 3 and q.waiting("a")
    b = _taken(q)  # b's only batch: its line goes
    assert b.key == B1 and len(q) == 2 and not q.waiting("b")
    q.put(b, front=True)  # put back to be tried again: waiting once more
    assert len(q) == 3 and q.waiting("b")
    q.drop(lambda k: k.workspace != "a")
    assert len(q) == 1 and not q.waiting("a") and q.waiting("b")
    q.done(B1)
    assert _taken(q).key == B1 and len(q) == 0 and not q.waiting("b")
    assert q.take() is None


def test_a_workspace_is_backlogged_once_one_of_its_lines_has_a_second_batch_waiting():
    q = FairQueue()
    q.put(batch(A1, 1))
    q.put(batch(A2, 1))  # one message observed by two representations: a batch in each line
    assert not q.backlogged("a")
    assert _taken(q).key == A1 and not q.backlogged("a")
    q.put(batch(A1, 2))  # the running representation's next message: one waiting in its line
    assert not q.backlogged("a")
    q.put(batch(A1, 3))
    assert q.backlogged("a") and not q.backlogged("b")
    assert _taken(q).key == A2 and q.backlogged("a")  # A1's two still wait behind its running one
    q.done(A1)
    q.done(A2)
    assert _taken(q).key == A1 and not q.backlogged("a")  # the last one of A1's line is left
    q.put(batch(A2, 4))
    q.put(batch(A2, 5))
    assert q.backlogged("a")
    q.drop(lambda k: k != A2)
    assert not q.backlogged("a") and len(q) == 1  # A1's last one


def test_the_turn_before_is_known_from_delivery_order_only_while_the_partition_is_held():
    turns = PrecedingTurns()
    first = turns.delivered(0, 5, msg(5, peer="bob"))
    assert first.unknown  # the first message of the session since the partition was taken
    second = turns.delivered(0, 7, msg(7, peer="alice"))
    assert not second.unknown and second.message is not None and second.message.peer_id == "bob"
    assert turns.delivered(0, 6, msg(6)).unknown  # delivered again, out of order
    turns.forget(0)
    assert turns.delivered(0, 9, msg(9)).unknown
