"""Memory formation end to end: SDK -> ingest -> deriver (local reasoner) -> memory projection."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import psycopg
import pytest
from honcho import Honcho
from honcho.api_types import MessageCreateParams, SessionPeerConfig

from mnemo_runtime.tokens import TokenCounter

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
LOCOMO = DATA / "locomo" / "locomo-dev5.json"


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_a_locomo_session_becomes_grounded_observations(settle, mnemo, workspace, database_url):
    conv = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")
    turns = conv["conversation"]["session_1"]
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    caroline, melanie = h.peer("caroline"), h.peer("melanie")
    session = h.session("s1")
    session.add_peers([caroline, melanie])
    sent = session.add_messages(
        [
            MessageCreateParams(
                peer_id=t["speaker"].lower(), content=t["text"], metadata={"dia_id": t["dia_id"]}
            )
            for t in turns
        ]
    )
    settle(h)

    facts = caroline.conclusions.list()
    contents = [f.content for f in facts]
    assert any("LGBTQ support group" in c for c in contents), contents
    assert all(
        f.level == "explicit" and f.observer_id == f.observed_id == "caroline" for f in facts
    )

    # Searchable by meaning, within the representation only.
    hits = caroline.conclusions.query("support group meeting", top_k=3)
    assert hits and "support group" in hits[0].content
    assert all(hit.observed_id == "caroline" for hit in hits)

    # Every observation walks back to the message it came from, and its span is in that message.
    by_id = {m.id: m for m in sent}
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT o.id, o.source_span, s.source_id FROM observations o"
            " JOIN observation_sources s ON s.workspace = o.workspace AND s.observation_id = o.id"
            " AND s.source_kind = 'message' WHERE o.workspace = %s",
            (workspace,),
        ).fetchall()
    assert len(rows) >= len(facts)
    for _, span, message_id in rows:
        message = by_id[message_id]
        assert span.lower() in message.content.lower()

    # Each observation's tokens were counted once, when it was projected.
    with psycopg.connect(database_url) as conn:
        counted = conn.execute(
            "SELECT content, token_count FROM observations WHERE workspace = %s", (workspace,)
        ).fetchall()
    counter = TokenCounter()
    assert counted and [n for _, n in counted] == counter.count_many([c for c, _ in counted])


def test_an_observer_only_learns_what_it_witnessed(settle, mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    alice, bob, carol = h.peer("alice"), h.peer("bob"), h.peer("carol")
    watched = h.session("with-alice", peers=[(alice, SessionPeerConfig(observe_others=True)), bob])
    watched.add_messages([bob.message("I work as a nurse at the city hospital.")])
    private = h.session(
        "without-alice", peers=[(carol, SessionPeerConfig(observe_others=True)), bob]
    )
    private.add_messages([bob.message("I am secretly learning to fly planes.")])
    settle(h)

    alice_of_bob = [c.content for c in alice.conclusions_of(bob).list()]
    carol_of_bob = [c.content for c in carol.conclusions_of(bob).list()]
    bob_self = [c.content for c in bob.conclusions.list()]
    assert any("nurse" in c for c in alice_of_bob)
    assert not any("fly" in c for c in alice_of_bob)
    assert any("fly" in c for c in carol_of_bob) and not any("nurse" in c for c in carol_of_bob)
    assert any("nurse" in c for c in bob_self) and any("fly" in c for c in bob_self)
    assert not alice.conclusions_of(bob).query("flying planes", top_k=5) or all(
        "fly" not in c.content for c in alice.conclusions_of(bob).query("flying planes", top_k=5)
    )


def test_conclusions_created_and_deleted_through_the_api(mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    alice, bob = h.peer("alice"), h.peer("bob")
    made = alice.conclusions_of(bob).create([{"content": "Bob prefers tea to coffee."}])
    assert [c.content for c in made] == ["Bob prefers tea to coffee."]
    assert [c.content for c in alice.conclusions_of(bob).query("What does Bob drink?")] == [
        "Bob prefers tea to coffee."
    ]
    again = alice.conclusions_of(bob).create([{"content": "Bob prefers tea to coffee."}])
    assert again[0].id == made[0].id and again[0].times_derived == 2
    alice.conclusions_of(bob).delete(made[0].id)
    assert alice.conclusions_of(bob).list().items == []
    assert alice.conclusions_of(bob).query("What does Bob drink?") == []


def test_a_bad_conclusion_query_is_a_422_naming_the_field(mnemo, workspace, admin):
    url = f"{mnemo.url}/v3/workspaces/{workspace}"
    httpx.post(
        f"{mnemo.url}/v3/workspaces", json={"id": workspace}, headers=admin
    ).raise_for_status()
    for filters, field in (
        ({"observed_id": "bob"}, "filters.observer_id"),
        ({"observer_id": "", "observed_id": "bob"}, "filters.observer_id"),
        ({"observer_id": "a", "observed_id": "b", "level": "rumour"}, "filters.level"),
        ({"observer_id": "a", "observed_id": "b", "colour": "red"}, "filters.colour"),
    ):
        r = httpx.post(
            f"{url}/conclusions/query", json={"query": "tea", "filters": filters}, headers=admin
        )
        assert r.status_code == 422, (filters, r.text)
        assert r.json()["field"] == field, r.text
