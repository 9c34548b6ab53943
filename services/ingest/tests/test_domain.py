"""Ingest decisions on the write model: routing, refusals, idempotent ids."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo_ingest.decision import Context
from mnemo_ingest.domain import decide
from mnemo_ingest.model import WorkspaceModel
from mnemo_ingest.ports import SessionCopy, StoredMessage
from mnemo_schema import commands as c
from mnemo_schema.config import PeerConfig, SessionPeerConfig
from mnemo_schema.errors import Refusal
from mnemo_schema.events import MessagePosted, PeerCreated, PeerJoinedSession

CTX = Context(workspace="w", now=datetime(2024, 1, 1, tzinfo=UTC))


def model_with(*cmds: c.Command) -> WorkspaceModel:
    m = WorkspaceModel()
    for cmd in (c.EnsureWorkspace(), *cmds):
        decide(m, cmd, CTX)
    return m


def post(m: WorkspaceModel, *senders: str, key: str | None = None) -> list[MessagePosted]:
    cmd = c.PostMessages(
        session_id="s",
        messages=[c.NewMessage(peer_id=p, content=f"from {p}") for p in senders],
        idempotency_key=key,
    )
    events = decide(m, cmd, CTX, [3] * len(senders)).events
    return [e for e in events if isinstance(e, MessagePosted)]


def pairs(e: MessagePosted) -> list[tuple[str, str]]:
    return [(r.observer, r.observed) for r in e.representations]


def test_a_message_feeds_its_senders_own_model_and_observers_present():
    m = model_with(
        c.EnsureSession(
            session_id="s",
            peers={"a": SessionPeerConfig(), "b": SessionPeerConfig(observe_others=True)},
        )
    )
    (msg,) = post(m, "a")
    assert pairs(msg) == [("a", "a"), ("b", "a")]
    (reply,) = post(m, "b")
    assert pairs(reply) == [("b", "b")]  # a does not observe others


def test_routing_follows_membership_at_the_moment_of_posting():
    m = model_with(
        c.EnsureSession(session_id="s", peers={"b": SessionPeerConfig(observe_others=True)})
    )
    before = post(m, "a")[0]
    decide(m, c.RemoveSessionPeers(session_id="s", peer_ids=["b"]), CTX)
    after = post(m, "a")[0]
    assert ("b", "a") in pairs(before)
    assert ("b", "a") not in pairs(after)


def test_opted_out_peers_feed_no_representation():
    m = model_with(
        c.EnsurePeer(peer_id="hidden", configuration=PeerConfig(observe_me=False)),
        c.EnsureSession(
            session_id="s",
            peers={
                "quiet": SessionPeerConfig(observe_me=False),
                "watcher": SessionPeerConfig(observe_others=True),
            },
        ),
    )
    assert [pairs(e) for e in post(m, "hidden", "quiet")] == [[], []]


def test_posting_creates_and_joins_an_unknown_sender_first():
    m = model_with(c.EnsureSession(session_id="s"))
    events = decide(
        m,
        c.PostMessages(session_id="s", messages=[c.NewMessage(peer_id="new", content="hi")]),
        CTX,
        [1],
    ).events
    assert [type(e) for e in events] == [PeerCreated, PeerJoinedSession, MessagePosted]


@pytest.mark.parametrize(
    ("cmd", "status", "field"),
    [
        (
            c.PostMessages(session_id="nope", messages=[c.NewMessage(peer_id="a", content="x")]),
            404,
            "session_id",
        ),
        (c.UpdatePeer(peer_id="ghost", metadata={}), 404, "peer_id"),
        (
            c.ConfigureSessionPeer(session_id="s", peer_id="stranger", observe_me=False),
            404,
            "peer_id",
        ),
    ],
)
def test_refusals_name_the_field(cmd, status, field):
    m = model_with(c.EnsureSession(session_id="s"))
    with pytest.raises(Refusal) as err:
        decide(m, cmd, CTX, [1])
    assert (err.value.status, err.value.field) == (status, field)


def test_commands_need_an_existing_workspace():
    with pytest.raises(Refusal) as err:
        decide(WorkspaceModel(), c.EnsurePeer(peer_id="p"), CTX)
    assert err.value.status == 404


def test_an_idempotency_key_yields_the_same_ids_on_retry():
    m = model_with(c.EnsureSession(session_id="s"))
    first = post(m, "a", "b", key="k1")
    retry = post(m, "a", "b", key="k1")
    other = post(m, "a", "b", key="k2")
    assert [e.message_id for e in first] == [e.message_id for e in retry]
    assert [e.event_id for e in first] == [e.event_id for e in retry]
    assert {e.message_id for e in other}.isdisjoint(e.message_id for e in first)
    assert len({e.message_id for e in post(m, "a", "a")}) == 2


def test_ensure_is_get_or_create():
    m = WorkspaceModel()
    assert decide(m, c.EnsureWorkspace(), CTX).created is True
    again = decide(m, c.EnsureWorkspace(), CTX)
    assert again.created is False and again.events == []


def test_messages_carry_the_configuration_in_force_when_posted():
    off = {"reasoning": {"enabled": False}}
    m = model_with(
        c.UpdateWorkspace.model_validate(
            {"configuration": {"custom_instructions": "Names matter."}}
        ),
        c.EnsureSession.model_validate(
            {"session_id": "s", "configuration": {"reasoning": {"custom_instructions": "X"}}}
        ),
    )
    cmd = c.PostMessages.model_validate(
        {
            "session_id": "s",
            "messages": [
                {"peer_id": "a", "content": "kept"},
                {"peer_id": "a", "content": "private", "configuration": off},
            ],
        }
    )
    kept, private = (e for e in decide(m, cmd, CTX, [1, 1]).events if isinstance(e, MessagePosted))
    assert (kept.reasoning, kept.instructions) == (True, "Names matter.\n\nX")
    assert (private.reasoning, private.instructions) == (False, "Names matter.\n\nX")
    decide(m, c.UpdateSession.model_validate({"session_id": "s", "configuration": off}), CTX)
    assert [e.reasoning for e in post(m, "a")] == [False]


def test_scopes_hold_existing_sessions():
    m = model_with(c.EnsureSession(session_id="s", scopes=["jobs"]))
    assert m.scopes == {"jobs": {"s"}}
    with pytest.raises(Refusal) as err:
        decide(m, c.AddScopeSessions(scope_id="jobs", session_ids=["s", "nope"]), CTX)
    assert (err.value.status, err.value.field) == (404, "session_ids.1")
    with pytest.raises(Refusal) as err:
        decide(m, c.RemoveScopeSession(scope_id="other", session_id="s"), CTX)
    assert (err.value.status, err.value.field) == (404, "scope_id")
    decide(m, c.DeleteSession(session_id="s"), CTX)
    assert m.scopes == {"jobs": set()}


def test_deletions_are_events_once_and_no_ops_after():
    m = model_with(c.EnsureSession(session_id="s", peers={"a": SessionPeerConfig()}))
    (msg,) = post(m, "a")
    for cmd in (
        c.DeleteMessage(session_id="s", message_id=msg.message_id),
        c.DeletePeer(peer_id="a"),
        c.DeleteSession(session_id="s"),
        c.DeleteWorkspace(),
    ):
        first = decide(m, cmd, CTX).events
        assert [type(e).__name__ for e in first] == [
            type(cmd).__name__.replace("Delete", "") + "Deleted"
        ]
        assert decide(m, cmd, CTX).events == []  # deleting again changes nothing


def test_deleting_what_never_was_is_a_404_naming_it():
    m = model_with(c.EnsureSession(session_id="s"))
    with pytest.raises(Refusal) as peer:
        decide(m, c.DeletePeer(peer_id="ghost"), CTX)
    assert peer.value.status == 404 and peer.value.field == "peer_id"
    with pytest.raises(Refusal) as session:
        decide(m, c.DeleteSession(session_id="ghost"), CTX)
    assert session.value.status == 404


def test_an_erased_session_made_again_can_be_erased_again():
    m = model_with(c.EnsureSession(session_id="s"))
    decide(m, c.DeleteSession(session_id="s"), CTX)
    decide(m, c.EnsureSession(session_id="s"), CTX)
    assert [e.type for e in decide(m, c.DeleteSession(session_id="s"), CTX).events] == [
        "SessionDeleted"
    ]


def _copy_of(events: list[MessagePosted]) -> SessionCopy:
    return SessionCopy(
        metadata={"topic": "x"},
        configuration={},
        messages=[
            StoredMessage(e.message_id, e.peer_id, e.content, e.created_at, e.token_count)
            for e in events
        ],
    )


def test_a_clone_copies_members_and_messages_up_to_the_one_named():
    m = model_with(
        c.EnsureSession(
            session_id="s",
            peers={"a": SessionPeerConfig(), "b": SessionPeerConfig(observe_others=True)},
        )
    )
    posted = post(m, "a", "b", "a")
    copy = _copy_of(posted)
    whole = decide(m, c.CloneSession(session_id="s", clone_id="c1"), CTX, copy=copy)
    assert whole.session_id == "c1" and whole.created
    joined = {
        (e.peer_id, e.observe_others) for e in whole.events if isinstance(e, PeerJoinedSession)
    }
    assert joined == {("a", False), ("b", True)}
    copies = [e for e in whole.events if isinstance(e, MessagePosted)]
    assert [e.cloned_from for e in copies] == [e.message_id for e in posted]
    assert [e.content for e in copies] == [e.content for e in posted]
    assert all(e.session_id == "c1" and not e.representations for e in copies)
    assert not {e.message_id for e in copies} & {e.message_id for e in posted}

    cut = decide(m, c.CloneSession(session_id="s", message_id=posted[1].message_id), CTX, copy=copy)
    assert [e.cloned_from for e in cut.events if isinstance(e, MessagePosted)] == [
        e.message_id for e in posted[:2]
    ]
    assert cut.session_id not in (None, "s", "c1")


@pytest.mark.parametrize(
    ("cmd", "status", "field"),
    [
        (c.CloneSession(session_id="nope"), 404, "session_id"),
        (c.CloneSession(session_id="s", message_id="elsewhere"), 404, "message_id"),
        (c.CloneSession(session_id="s", clone_id="s"), 409, "clone_id"),
    ],
)
def test_a_clone_is_refused_naming_the_field(cmd, status, field):
    m = model_with(c.EnsureSession(session_id="s"))
    with pytest.raises(Refusal) as err:
        decide(m, cmd, CTX, copy=_copy_of(post(m, "a")))
    assert (err.value.status, err.value.field) == (status, field)


def test_an_update_of_a_missing_workspace_creates_it_with_what_it_sets():
    m = WorkspaceModel()
    decision = decide(m, c.UpdateWorkspace(metadata={"plan": "pro"}), CTX)
    assert decision.created is True
    (created,) = decision.events
    assert created.type == "WorkspaceCreated" and created.metadata == {"plan": "pro"}
    again = decide(m, c.UpdateWorkspace(metadata={"plan": "free"}), CTX)
    assert again.created is False
    assert [e.type for e in again.events] == ["WorkspaceUpdated"]
