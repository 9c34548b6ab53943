"""Chat end to end through the official SDK: ingest, memory formation, a cited, scoped answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import psycopg
import pytest
from honcho import Honcho
from honcho.api_types import MessageCreateParams, SessionPeerConfig

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
LOCOMO = DATA / "locomo" / "locomo-dev5.json"


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_a_locomo_question_is_answered_with_evidence_from_its_scope(
    settle, mnemo, workspace, database_url, admin
):
    conv = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    caroline, melanie = h.peer("caroline"), h.peer("melanie")
    session = h.session("s1")
    session.add_peers([caroline, melanie])
    session.add_messages(
        [
            MessageCreateParams(peer_id=t["speaker"].lower(), content=t["text"])
            for t in conv["conversation"]["session_1"]
        ]
    )
    settle(h)

    question = "What support group did Caroline go to?"
    reply = caroline.chat(question, include_evidence=True, reasoning_level="minimal")
    assert reply.content and "support group" in reply.content.lower()
    assert reply.evidence is not None and reply.evidence.conclusions
    raw = httpx.post(
        f"{mnemo.url}/v3/workspaces/{workspace}/peers/caroline/chat",
        json={"query": question, "reasoning_level": "minimal"},
        timeout=60,
        headers=admin,
    ).json()
    cited = raw["citations"]["observation_ids"]
    assert cited and set(cited) <= {c.id for c in reply.evidence.conclusions}
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT id, observer, observed FROM observations WHERE workspace = %s AND id = ANY(%s)",
            (workspace, cited),
        ).fetchall()
    assert {r[0] for r in rows} == set(cited)
    assert all(r[1] == r[2] == "caroline" for r in rows)
    assert all(c.observer_id == c.observed_id == "caroline" for c in reply.evidence.conclusions)

    # The same answer streamed, parsed by the SDK's own SSE reader, evidence on the last event.
    stream = caroline.chat_stream(question, include_evidence=True, reasoning_level="minimal")
    assert "".join(stream) == reply.content
    assert stream.evidence is not None
    assert [c.id for c in stream.evidence.conclusions] == [c.id for c in reply.evidence.conclusions]


def test_chat_never_reads_a_session_the_observer_was_not_in(settle, mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    alice, bob, carol = h.peer("alice"), h.peer("bob"), h.peer("carol")
    watched = h.session("with-alice", peers=[(alice, SessionPeerConfig(observe_others=True)), bob])
    watched.add_messages([bob.message("I work as a nurse at the city hospital.")])
    private = h.session(
        "without-alice", peers=[(carol, SessionPeerConfig(observe_others=True)), bob]
    )
    private.add_messages([bob.message("I am secretly learning to fly planes.")])
    settle(h)

    for question in ("Is Bob learning to fly planes?", "Where does Bob work as a nurse?"):
        reply = alice.chat(question, target=bob, include_evidence=True, reasoning_level="max")
        assert "fly" not in (reply.content or "").lower()
        assert reply.evidence is not None
        assert all("fly" not in c.content.lower() for c in reply.evidence.conclusions)
        assert all(m.session_id == "with-alice" for m in reply.evidence.messages)
        assert all(c.observer_id == "alice" for c in reply.evidence.conclusions)
    assert "nurse" in (alice.chat("Where does Bob work?", target=bob) or "")
    assert "fly" in (carol.chat("Is Bob learning to fly planes?", target=bob) or "")


def test_bad_chat_requests_name_the_field(mnemo, workspace, admin):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    h.session("s", peers=[h.peer("alice")])
    url = f"{mnemo.url}/v3/workspaces/{workspace}/peers"
    empty = httpx.post(f"{url}/alice/chat", json={"query": ""}, headers=admin)
    level = httpx.post(
        f"{url}/alice/chat", json={"query": "hi", "reasoning_level": "huge"}, headers=admin
    )
    ghost = httpx.post(f"{url}/ghost/chat", json={"query": "hi"}, headers=admin)
    target = httpx.post(f"{url}/alice/chat", json={"query": "hi", "target": "ghost"}, headers=admin)
    assert (empty.status_code, empty.json()["field"]) == (422, "query"), empty.json()
    assert (level.status_code, level.json()["field"]) == (422, "reasoning_level")
    assert (ghost.status_code, ghost.json()["field"]) == (404, "peer_id")
    assert (target.status_code, target.json()["field"]) == (404, "target")
