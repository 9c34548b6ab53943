"""The official honcho-ai 2.7 SDK against a running Mnemo: workspaces, peers, sessions, messages."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import psycopg
import pytest
from honcho import Honcho
from honcho.api_types import SessionPeerConfig
from honcho.http.exceptions import NotFoundError, UnprocessableEntityError


def client(mnemo, workspace: str) -> Honcho:
    return Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=20)


def test_entities_and_messages_round_trip(mnemo, workspace):
    h = client(mnemo, workspace)
    alice = h.peer("alice", metadata={"role": "user"})
    bob = h.peer("bob")
    session = h.session("chat-1", metadata={"topic": "moving"})
    session.add_peers([alice, (bob, SessionPeerConfig(observe_others=True))])

    sent = session.add_messages(
        [
            alice.message("I moved to Lisbon last week.", metadata={"n": 1}),
            bob.message("Nice! How is the weather?"),
            alice.message("Sunny.", created_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ]
    )
    assert [m.peer_id for m in sent] == ["alice", "bob", "alice"]
    assert all(m.token_count > 0 for m in sent)
    assert sent[2].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

    # Reads right after the write reflect it.
    listed = list(session.messages())
    assert [m.content for m in listed] == [
        "I moved to Lisbon last week.",
        "Nice! How is the weather?",
        "Sunny.",
    ]
    assert [m.id for m in listed] == [m.id for m in sent]
    assert [m.id for m in session.messages(reverse=True)] == [m.id for m in reversed(sent)]
    assert [m.content for m in session.messages(filters={"peer_id": "bob"})] == [
        "Nice! How is the weather?"
    ]
    assert [m.content for m in session.messages(filters={"metadata": {"n": 1}})] == [
        "I moved to Lisbon last week."
    ]
    assert session.get_message(sent[0].id).content == "I moved to Lisbon last week."
    updated = session.update_message(sent[1], {"flag": True})
    assert updated.metadata == {"flag": True}

    assert sorted(p.id for p in session.peers()) == ["alice", "bob"]
    assert session.get_peer_configuration(bob).observe_others is True
    session.set_peer_configuration(bob, SessionPeerConfig(observe_others=False))
    assert session.get_peer_configuration(bob).observe_others is False
    assert alice.get_metadata() == {"role": "user"}
    assert session.get_metadata() == {"topic": "moving"}
    assert [s.id for s in h.sessions()] == ["chat-1"]
    assert sorted(p.id for p in h.peers()) == ["alice", "bob"]
    assert [s.id for s in alice.sessions()] == ["chat-1"]

    session.remove_peers(bob)
    assert [p.id for p in session.peers()] == ["alice"]


def test_pagination_over_many_messages(mnemo, workspace):
    h = client(mnemo, workspace)
    s = h.session("long")
    p = h.peer("p")
    s.add_messages([p.message(f"message {i}") for i in range(100)])
    s.add_messages([p.message(f"message {i}") for i in range(100, 130)])
    page = s.messages(size=40)
    assert page.total == 130 and page.pages == 4 and len(page.items) == 40
    assert [m.content for m in page] == [f"message {i}" for i in range(130)]


def test_posting_adds_the_sender_and_routes_by_membership(mnemo, workspace, database_url):
    h = client(mnemo, workspace)
    s = h.session("tom", peers=[("observer", SessionPeerConfig(observe_others=True))])
    h.peer("shy", configuration=None)
    h.peer("observer")
    s.add_messages([h.peer("speaker").message("I play the cello.")])
    assert sorted(p.id for p in s.peers()) == ["observer", "speaker"]
    with psycopg.connect(database_url) as conn:
        (reps,) = conn.execute(
            "SELECT representations FROM messages WHERE workspace = %s", (workspace,)
        ).fetchone()
    assert reps == [
        {"observer": "speaker", "observed": "speaker"},
        {"observer": "observer", "observed": "speaker"},
    ]


def test_unknown_resources_are_404(mnemo, workspace, admin):
    h = client(mnemo, workspace)
    h.peer("someone")
    with pytest.raises(NotFoundError, match="message 'missing' not found"):
        h.session("exists").get_message("missing")
    r = httpx.post(
        f"{mnemo.url}/v3/workspaces/{workspace}/sessions/nope/messages/list", headers=admin
    )
    assert r.status_code == 404 and r.json()["field"] == "session_id"
    r = httpx.post(f"{mnemo.url}/v3/workspaces/never-made/peers/list", headers=admin)
    assert r.status_code == 404 and r.json()["field"] == "workspace_id"


def test_set_metadata_on_a_fresh_client_creates_the_workspace(mnemo, workspace):
    # The SDK sends only PUT /v3/workspaces/{id}: an update of a workspace that does not exist
    # creates it (get-or-create), as the reference server does.
    Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0).set_metadata({"plan": "pro"})
    fresh = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0)
    assert fresh.get_metadata() == {"plan": "pro"}
    fresh.set_metadata({"plan": "team"})
    assert client(mnemo, workspace).get_metadata() == {"plan": "team"}


def test_bad_input_names_the_field_and_writes_nothing(mnemo, workspace, admin):
    h = client(mnemo, workspace)
    s = h.session("strict")
    p = h.peer("p")
    base = f"{mnemo.url}/v3/workspaces/{workspace}/sessions/strict/messages"
    batch = [{"peer_id": "p", "content": "fine"}, {"peer_id": "p", "content": "x" * 50_001}]
    r = httpx.post(base, json={"messages": batch}, headers=admin)
    assert r.status_code == 422
    assert r.json()["field"] == "messages.1.content"
    r = httpx.post(base, json={"messages": [{"peer_id": "bad id", "content": "x"}]}, headers=admin)
    assert r.status_code == 422 and r.json()["field"] == "messages.0.peer_id"
    r = httpx.post(base, json={"messages": [{"peer_id": "p", "content": "x"}] * 101}, headers=admin)
    assert r.status_code == 413 and r.json()["field"] == "messages"
    r = httpx.post(base, json={"messages": []}, headers=admin)
    assert r.status_code == 422
    r = httpx.post(f"{base}/list", json={"filters": {"colour": "red"}}, headers=admin)
    assert r.status_code == 422 and r.json()["field"] == "filters.colour"
    with pytest.raises(UnprocessableEntityError):
        s.add_messages([p.message("ok"), p.message("y" * 60_000)])
    assert list(s.messages()) == []


def test_idempotency_key_makes_a_retry_harmless(mnemo, workspace, database_url, admin):
    h = client(mnemo, workspace)
    h.session("retry")
    url = f"{mnemo.url}/v3/workspaces/{workspace}/sessions/retry/messages"
    body = {"messages": [{"peer_id": "u", "content": f"m{i}"} for i in range(5)]}
    first = httpx.post(url, json=body, headers={**admin, "Idempotency-Key": "batch-1"})
    second = httpx.post(url, json=body, headers={**admin, "Idempotency-Key": "batch-1"})
    assert first.status_code == second.status_code == 201
    assert [m["id"] for m in first.json()] == [m["id"] for m in second.json()]
    third = httpx.post(url, json=body, headers=admin)  # no key: a new batch
    assert {m["id"] for m in third.json()}.isdisjoint(m["id"] for m in first.json())
    page = httpx.post(f"{url}/list", headers=admin).json()
    assert page["total"] == 10
