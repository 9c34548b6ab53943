"""Scopes through the SDK: recall through a scope sees only what its sessions hold."""

from __future__ import annotations

import httpx
import pytest
from honcho import Honcho
from honcho.http.exceptions import NotFoundError

SECRET = "4417"


def _text(value: object) -> str:
    """An answer (or a chat response with its evidence) as text to look for the secret in."""
    return str(value)


def test_recall_through_a_scope_never_sees_other_sessions(settle, mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    alice = h.peer("alice")
    work = h.session("work", peers=[alice], scopes=["jobs"])
    home = h.session("home", peers=[alice])
    work.add_messages([alice.message("I work as a nurse at the children's hospital.")])
    home.add_messages([alice.message(f"My bank PIN is {SECRET} and I keep it at home.")])
    settle(h)

    # Unconfined, the secret is there to be found: what follows could fail.
    assert SECRET in _text(alice.chat("What is my bank PIN?", include_evidence=True))
    assert any(SECRET in m.content for m in h.search("bank PIN"))

    jobs = h.get_scope("jobs")
    assert [s.id for s in jobs.sessions()] == ["work"]
    assert [s.id for s in h.scopes()] == ["jobs"]
    status = jobs.status()
    assert status["work"].state == "completed" and (status["work"].docs_copied or 0) >= 1

    answer = alice.chat("What is my bank PIN?", scope="jobs", include_evidence=True)
    assert SECRET not in _text(answer)
    assert {m.session_id for m in answer.evidence.messages} <= {"work"}  # type: ignore[union-attr]
    streamed = "".join(alice.chat_stream("What is my bank PIN?", scope=["jobs"]))
    assert SECRET not in streamed
    assert SECRET not in _text(alice.chat("bank PIN?", sessions=["work"]))
    assert SECRET not in alice.representation(scope="jobs", search_query="bank PIN")
    context = work.context(peer_target="alice", scope="jobs", search_query="bank PIN")
    assert SECRET not in _text(context.peer_representation)
    assert context.peer_card is None
    found = h.search("bank PIN", scope="jobs")
    assert found and all(m.session_id == "work" for m in found)
    # Conclusions through the scope (Mnemo's ``scope`` in the body of both routes).
    url = f"{mnemo.url}/v3/workspaces/{workspace}/conclusions"
    mine = {"observer_id": "alice", "observed_id": "alice"}
    assert any(SECRET in c.content for c in alice.conclusions.list())
    listed = httpx.post(
        f"{url}/list", json={"filters": mine, "scope": "jobs"}, headers=mnemo.headers
    ).json()["items"]
    assert listed and all(SECRET not in c["content"] for c in listed)
    queried = httpx.post(
        f"{url}/query",
        json={"query": "bank PIN", "filters": mine, "scope": "jobs"},
        headers=mnemo.headers,
    ).json()
    assert all(SECRET not in c["content"] for c in queried)

    # Adding the session makes its memory visible through the scope; removing it hides it.
    jobs.add_sessions(["home"])
    assert SECRET in _text(alice.chat("What is my bank PIN?", scope="jobs"))
    jobs.remove_session("home")
    assert SECRET not in _text(alice.chat("What is my bank PIN?", scope="jobs"))
    assert [s.id for s in jobs.sessions()] == ["work"]

    # A scope with no sessions recalls nothing; an unknown one is a 404.
    h.scope("empty")
    assert SECRET not in _text(alice.chat("What is my bank PIN?", scope="empty"))
    assert h.search("nurse", scope="empty") == []
    with pytest.raises(NotFoundError):
        h.get_scope("missing")
    with pytest.raises(NotFoundError):
        alice.chat("What is my job?", scope="missing")


def test_recall_options_mnemo_does_not_take_are_refused_by_name(mnemo, workspace):
    base = f"{mnemo.url}/v3/workspaces/{workspace}"
    httpx.post(
        f"{mnemo.url}/v3/workspaces", json={"id": workspace}, headers=mnemo.headers
    ).raise_for_status()
    httpx.post(
        f"{base}/sessions", json={"id": "s", "peers": {"a": {}}}, headers=mnemo.headers
    ).raise_for_status()
    cases = [
        ("GET", f"{base}/sessions/s/context", {"params": {"colour": "red"}}, "colour"),
        ("GET", f"{base}/sessions/s/context", {"params": {"scope": "x"}}, "scope"),
        (
            "GET",
            f"{base}/sessions/s/context",
            {"params": {"peer_target": "a", "sessions": "other"}},
            "sessions",
        ),
        (
            "GET",
            f"{base}/sessions/s/context",
            {"params": {"peer_target": "a", "scope": "x", "peer_perspective": "a"}},
            "scope",
        ),
        ("POST", f"{base}/search", {"json": {"query": "q", "sessions": ["s"]}}, "sessions"),
        (
            "POST",
            f"{base}/peers/a/chat",
            {"json": {"query": "q", "scope": "x", "session_id": "s"}},
            "scope",
        ),
        (
            "POST",
            f"{base}/peers/a/chat",
            {"json": {"query": "q", "filters": {"peer_id": "a"}}},
            "filters.peer_id",
        ),
        (
            "POST",
            f"{base}/peers/a/representation",
            {"json": {"filters": {"session_id": 3}}},
            "filters.session_id",
        ),
        ("POST", f"{base}/sessions/s/messages/list?colour=red", {}, "colour"),
        (
            "POST",
            f"{base}/sessions/s/messages?colour=red",
            {"json": {"messages": [{"peer_id": "a", "content": "hi"}]}},
            "colour",
        ),
    ]
    for method, url, kw, field in cases:
        r = httpx.request(method, url, timeout=30, headers=mnemo.headers, **kw)  # type: ignore[arg-type]
        assert r.status_code == 422, (url, kw, r.status_code, r.text)
        assert r.json()["field"] == field, (url, kw, r.text)
