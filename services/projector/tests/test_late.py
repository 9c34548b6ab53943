"""Late work: what names an erased peer, session or workspace, which erasure covers it, and
what the memory projection is told when it goes."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_projector.erasure import holds_text
from mnemo_projector.late import Recorded, late_retraction, made_again, named_by
from mnemo_runtime.streams import Stored
from mnemo_schema.dreams import DreamCompleted, DreamDue, DreamsErased
from mnemo_schema.events import (
    Envelope,
    PeerCreated,
    SessionCreated,
    WorkspaceCreated,
    encode_event,
)
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationsErased,
    ObservationWritten,
    PeerCardUpdated,
)
from mnemo_schema.progress import DerivationProgressed, SummarizationProgressed

WS = "w"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _log(events: list[Envelope]) -> list[Stored]:
    return [Stored(i, e.subject(), encode_event(e)) for i, e in enumerate(events, start=1)]


def test_late_progress_names_what_would_erase_it_and_a_new_life_of_it_keeps_it():
    line = DerivationProgressed(workspace=WS, observer="bob", observed="alice", done_seq=4)
    counted = SummarizationProgressed(workspace=WS, session_id="s", done_seq=4)
    assert named_by(line) == ("peer", ["alice", "bob"])
    assert named_by(counted) == ("session", ["s"])
    due = DreamDue(
        workspace=WS,
        observer="bob",
        observed="bob",
        reason="requested",
        due_at=NOW,
        session_id="s",
    )
    done = DreamCompleted(workspace=WS, observer="bob", observed="alice", due_event_id="d")
    assert named_by(due) == ("peer", ["bob"])  # not the session it was asked in
    assert named_by(done) == ("peer", ["alice", "bob"])
    card = PeerCardUpdated(workspace=WS, observer="bob", observed="alice", card=["a nurse"])
    assert named_by(card) == ("peer", ["alice", "bob"])
    # What the memory projection is told: the card goes, the dream leaves the queue.
    dropped = late_retraction(card)
    assert isinstance(dropped, ObservationsErased)
    assert (dropped.observer, dropped.observed, dropped.card) == ("bob", "alice", True)
    assert dropped.observation_ids == []
    unqueued = late_retraction(due)
    assert isinstance(unqueued, DreamsErased)
    assert unqueued.due_event_ids == [due.event_id]
    assert late_retraction(done) is None
    assert late_retraction(line) is None
    seen = ObservationWritten(
        workspace=WS,
        observation_id="o",
        observer="bob",
        observed="alice",
        content="x",
        source_message_ids=["m"],
        source_span="x",
    )
    assert named_by(seen) == ("peer", ["alice", "bob"])
    dropped_seen = ObservationDeleted(
        workspace=WS, observation_id="o", observer="bob", observed="bob", reason="x"
    )
    assert named_by(dropped_seen) == ("peer", ["bob"])
    # Its observation's rows went with the erasure: nothing more to retract; its reason may
    # quote the observation, so it is overwritten.
    assert late_retraction(dropped_seen) is None
    assert holds_text(dropped_seen)
    gone = late_retraction(seen)
    assert isinstance(gone, ObservationsErased)
    assert (gone.observation_ids, gone.whole, gone.card) == (["o"], True, False)
    # Text is overwritten; ids and positions are only removed.
    assert [holds_text(e) for e in (card, due, done, line, counted)] == [
        True,
        True,
        False,
        False,
        False,
    ]
    between = _log(
        [
            PeerCreated(workspace=WS, peer_id="carol", metadata={}),
            SessionCreated(workspace=WS, session_id="t", metadata={}),
        ]
    )
    assert not made_again("peer", ["alice", "bob"], between)
    assert not made_again("session", ["s"], between)
    assert made_again("peer", ["carol"], between)
    assert made_again("session", ["t"], between)
    # A peer's id made again as a session is not the peer made again.
    assert not made_again("peer", ["t"], between)
    assert made_again("session", ["s"], _log([WorkspaceCreated(workspace=WS, metadata={})]))


def test_named_work_is_covered_by_the_newest_erasure_before_it_of_what_it_names():
    recorded = Recorded()
    recorded.add(WS, "peer", "alice", 10)
    recorded.add(WS, "peer", "alice", 30)
    recorded.add(WS, "session", "s", 20)
    recorded.add("other", "workspace", "other", 5)
    line = DerivationProgressed(workspace=WS, observer="bob", observed="alice", done_seq=4)
    counted = SummarizationProgressed(workspace=WS, session_id="s", done_seq=4)
    assert recorded.last_before(line, 5) is None
    assert recorded.last_before(line, 25) == 10
    assert recorded.last_before(line, 31) == 30
    assert recorded.last_before(counted, 25) == 20
    bob = DerivationProgressed(workspace=WS, observer="bob", observed="bob", done_seq=4)
    assert recorded.last_before(bob, 100) is None  # another workspace's erasure: not his
    recorded.add(WS, "workspace", WS, 40)
    assert recorded.last_before(bob, 100) == 40
    recorded.add(WS, "peer", "alice", 10)  # recorded again (a step that re-reads it): once
    assert recorded.at[(WS, "peer", "alice")] == [10, 30]
