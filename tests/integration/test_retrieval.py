"""The retrieval engine end to end: a whole LoCoMo conversation posted through the SDK, then asked.

Every session of conv-26 goes in with its own dates, as the benchmark posts it; what the first
sessions said must still be found after the eighteen that follow.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import httpx
import pytest
from honcho import Honcho

from mnemo_bench.mnemo_client import ingest
from mnemo_bench.readers import read_locomo

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
LOCOMO = DATA / "locomo" / "locomo-dev5.json"


def turns(messages: list) -> list[str]:
    return [m.metadata.get("turn_id") for m in messages]


@pytest.fixture(scope="module")
def conv26(mnemo, settle):
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO}")
    case = next(c for c in read_locomo(LOCOMO) if c.id == "conv-26")
    h = Honcho(
        base_url=mnemo.url,
        workspace_id=f"conv26-{uuid.uuid4().hex[:8]}",
        max_retries=0,
        timeout=60,
    )
    ingest(h, case)
    settle(h, timeout=240)
    return h


def test_a_fact_from_the_first_session_is_found_by_a_paraphrase_after_all_the_rest(conv26):
    # D1:16, said once in the first session: "Painting's a fun way to express my feelings".
    found = conv26.search("Which art form helps Melanie express her emotions?", limit=5)
    assert "D1:16" in turns(found)
    # D2:5, second session: "me-time each day - running, reading, or playing my violin".
    found = conv26.search("What does Melanie do to relax in the evening?", limit=5)
    assert "D2:5" in turns(found)


def test_a_temporal_question_is_answered_by_resolving_its_dates(conv26):
    # Said on 8 May 2023: "I went to a LGBTQ support group yesterday".
    question = "When did Caroline go to the LGBTQ support group?"
    assert turns(conv26.search(question, limit=3))[0] == "D1:3"
    best = conv26.peer("caroline").conclusions.query(question, top_k=3)
    assert any("7 May 2023" in c.content for c in best)
    # "last year", said in May 2023, is 2022: the question's year finds it.
    assert turns(conv26.search("What did Melanie paint in 2022?", limit=3))[0] == "D1:14"


def test_a_small_context_carries_the_evidence(conv26):
    session = conv26.session("session-19")
    ctx = session.context(
        tokens=2000,
        peer_target="caroline",
        search_query="What is Caroline's identity?",
        search_top_k=100,
        max_conclusions=100,
    )
    assert ctx.peer_representation and "transgender" in ctx.peer_representation.lower()


def test_odd_queries_get_a_valid_answer(conv26, admin):
    for text in ("x" * 10_000, "Где живёт Каролина?", "the of and", "?"):
        assert isinstance(conv26.search(text, limit=5), list)
        assert isinstance(conv26.peer("melanie").conclusions.query(text, top_k=5), list)
    for body in ({"query": ""}, {"query": "x" * 10_001}, {"query": "ok", "limit": 0}):
        r = httpx.post(
            f"{conv26.base_url}/v3/workspaces/{conv26.workspace_id}/search",
            json=body,
            headers=admin,
        )
        assert r.status_code == 422 and r.json()["field"], r.text
    nobody = conv26.peer("nobody-yet")
    nobody.get_metadata()  # creates the peer: a representation with no observations
    assert nobody.conclusions.query("anything at all", top_k=5) == []
