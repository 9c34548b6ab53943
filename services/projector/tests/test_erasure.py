"""What an erasure covers in the log: the planner over events as the stream holds them."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_projector.erasure import Target, plan
from mnemo_runtime.streams import Stored
from mnemo_schema.events import (
    Envelope,
    MessageDeleted,
    MessagePosted,
    PeerDeleted,
    SessionCreated,
    SessionDeleted,
    WorkspaceDeleted,
    encode_event,
)
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationWritten,
    PeerCardUpdated,
)
from mnemo_schema.progress import DerivationProgressed, SummarizationProgressed
from mnemo_schema.summaries import SummaryUpdated

WS = "w"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _msg(mid: str, session: str = "s", peer: str = "alice") -> MessagePosted:
    return MessagePosted(
        workspace=WS,
        session_id=session,
        message_id=mid,
        peer_id=peer,
        content=f"text of {mid}",
        metadata={},
        created_at=NOW,
        token_count=3,
    )


def _obs(oid: str, sources: list[str] = [], premises: list[str] = [], session: str = "s"):  # noqa: B006
    return ObservationWritten(
        workspace=WS,
        observation_id=oid,
        observer="alice",
        observed="alice",
        session_id=session,
        content=f"belief {oid}",
        source_message_ids=sources,
        premise_ids=premises,
        level="deductive" if premises else "explicit",
    )


def _summary(mid: str, seq: int) -> SummaryUpdated:
    return SummaryUpdated(
        workspace=WS,
        session_id="s",
        summary_type="short",
        content=f"up to {mid}",
        message_id=mid,
        message_seq=seq,
        messages_covered=seq,
        token_count=4,
    )


def _card(peer: str) -> PeerCardUpdated:
    return PeerCardUpdated(workspace=WS, observer=peer, observed=peer, card=["x"], origin="dreamer")


def _stored(subject: str, partition: int = 3) -> str:
    """``subject`` as the stream stores it: the workspace's partition after the workspace."""
    parts = subject.split(".")
    return ".".join([*parts[:3], str(partition), *parts[3:]])


def _matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: ``*`` one token, ``>`` the rest."""
    p, s = pattern.split("."), subject.split(".")
    for i, token in enumerate(p):
        if token == ">":
            return len(s) > i
        if i >= len(s) or token not in ("*", s[i]):
            return False
    return len(p) == len(s)


def _log(events: list[Envelope]) -> list[Stored]:
    return [Stored(i, _stored(e.subject()), encode_event(e)) for i, e in enumerate(events, start=1)]


def _history() -> list[Envelope]:
    deleted = ObservationDeleted(
        workspace=WS, observation_id="d1", observer="alice", observed="alice", reason="belief d1"
    )
    return [
        SessionCreated(workspace=WS, session_id="s", metadata={}),  # 1
        _msg("m1"),  # 2
        _msg("m2"),  # 3
        _summary("m1", 2),  # 4
        _summary("m2", 3),  # 5
        _obs("o1", sources=["m1"]),  # 6
        _obs("o2", sources=["m2"]),  # 7
        _obs("d1", premises=["o2"]),  # 8
        _obs("d2", premises=["d1", "o1"]),  # 9
        deleted,  # 10
        _card("alice"),  # 11
        _card("bob"),  # 12
        MessageDeleted(workspace=WS, session_id="s", message_id="m2"),  # 13
    ]


def _target() -> Target:
    deletion = _history()[-1]
    assert isinstance(deletion, MessageDeleted)
    return Target.of(13, deletion)


def test_a_message_takes_its_summaries_and_what_rests_on_it_along_the_provenance():
    p = plan(_target(), _log(_history()))
    assert p.messages == {"m2"}
    # The message, the summary from it on, o2 citing it, d1 resting on o2, d2 resting on d1,
    # d1's deletion (its reason may quote it), the dreamer's card of the representation.
    assert p.secure == {3, 5, 7, 8, 9, 10, 11}
    assert p.observations == {("alice", "alice"): {"o2", "d1", "d2"}}
    assert p.summaries == {"s": {5}}  # named to the memory projection, by position
    assert p.cards == {("alice", "alice")}
    # What does not rest on m2 stays: the session, m1, its summary, o1, bob's card, the deletion.
    assert not {1, 2, 4, 6, 12, 13} & (p.secure | p.plain)


def test_an_interrupted_erasure_still_finds_what_rests_on_what_it_erased_already():
    first = plan(_target(), _log(_history()))
    assert first.posted == {3}  # erased last
    # The first run erased o2, d1 and the summary, then stopped: the log no longer holds them.
    left = [s for s in _log(_history()) if s.seq not in {5, 7, 8}]
    again = plan(_target(), left, already=first.messages | first.erased_observations)
    assert again.secure == first.secure - {5, 7, 8}
    # What it still finds in the log (the retraction of the rest went out before any erasing).
    assert again.erased_observations == {"d2"}


def test_a_session_takes_all_its_events_and_leaves_other_sessions_alone():
    events = [*_history()[:-1], _msg("m3", session="t"), _obs("o3", ["m3"], session="t")]
    deletion = SessionDeleted(workspace=WS, session_id="s")
    events.append(deletion)
    stored = _log(events)
    p = plan(Target.of(len(events), deletion), stored)
    assert {1, 2, 3, 4, 5, 6, 7, 8, 9} <= p.secure
    assert not {14, 15, 16} & (p.secure | p.plain)
    assert p.messages == {"m1", "m2"}


def test_a_deletion_never_covers_an_earlier_deletion():
    events = [*_history(), _msg("m4"), SessionDeleted(workspace=WS, session_id="s")]
    deletion = events[-1]
    assert isinstance(deletion, SessionDeleted)
    p = plan(Target.of(len(events), deletion), _log(events))
    assert 13 not in p.secure | p.plain


def test_the_filters_read_the_stored_subjects_and_undecodable_events_of_the_session_go():
    events = [*_history()[:-1], _msg("m3", session="t")]
    deletion = SessionDeleted(workspace=WS, session_id="s")
    target = Target.of(len(events) + 3, deletion)
    stored = [
        *_log(events),
        Stored(len(events) + 1, _stored("mnemo.evt.w.msg.s"), b"not an event"),
        Stored(len(events) + 2, _stored("mnemo.evt.w.msg.t"), b"not an event"),
    ]
    # What the erasure may cover is on its filters; another session's messages and another
    # workspace's events are not read.
    read = [st for st in stored if any(_matches(f, st.subject) for f in target.filters())]
    assert {st.subject for st in stored} - {st.subject for st in read} == {
        _stored("mnemo.evt.w.msg.t")
    }
    assert not any(_matches(f, _stored("mnemo.evt.w2.msg.s")) for f in target.filters())
    p = plan(target, stored)
    assert len(events) + 1 in p.secure and len(events) + 2 not in p.secure | p.plain
    assert p.summaries == {"s": {4, 5}}


def test_the_progress_of_what_is_deleted_goes_and_the_rest_stays():
    events: list[Envelope] = [
        DerivationProgressed(workspace=WS, observer="alice", observed="alice", done_seq=2),  # 1
        DerivationProgressed(workspace=WS, observer="bob", observed="alice", done_seq=2),  # 2
        DerivationProgressed(workspace=WS, observer="bob", observed="bob", done_seq=2),  # 3
        SummarizationProgressed(workspace=WS, session_id="s", done_seq=2),  # 4
        SummarizationProgressed(workspace=WS, session_id="t", done_seq=2),  # 5
    ]
    stored = _log(events)
    peer = Target.of(6, PeerDeleted(workspace=WS, peer_id="alice"))
    # Read through the erasure's own filters; positions only, so removed, not overwritten.
    read = [st for st in stored if any(_matches(f, st.subject) for f in peer.filters())]
    assert {st.seq for st in read} == {1, 2, 3}
    p = plan(peer, read)
    assert (p.plain, p.secure) == ({1, 2}, set())
    session = Target.of(6, SessionDeleted(workspace=WS, session_id="s"))
    read = [st for st in stored if any(_matches(f, st.subject) for f in session.filters())]
    assert {st.seq for st in read} == {4}
    assert plan(session, read).plain == {4}
    # An undecodable event on a deleted peer's line goes too; another peer's stays.
    mangled = [
        Stored(7, _stored("mnemo.evt.w.work.deriver.bob.alice"), b"not an event"),
        Stored(8, _stored("mnemo.evt.w.work.deriver.bob.bob"), b"not an event"),
    ]
    assert plan(Target.of(9, PeerDeleted(workspace=WS, peer_id="alice")), mangled).secure == {7}


def test_a_peer_or_workspace_erasure_takes_its_representations_whole():
    peer = Target.of(5, PeerDeleted(workspace=WS, peer_id="alice"))
    assert peer.takes_whole(("alice", "bob")) and peer.takes_whole(("bob", "alice"))
    assert not peer.takes_whole(("bob", "bob"))
    assert Target.of(5, WorkspaceDeleted(workspace=WS)).takes_whole(("bob", "bob"))
    message = Target.of(5, MessageDeleted(workspace=WS, session_id="s", message_id="m"))
    session = Target.of(5, SessionDeleted(workspace=WS, session_id="s"))
    assert not message.takes_whole(("alice", "alice"))
    assert not session.takes_whole(("alice", "alice"))
