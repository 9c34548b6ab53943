"""get_context, representations and search through the SDK, over a LoCoMo conversation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from honcho import Honcho
from honcho.api_types import MessageCreateParams, SessionPeerConfig
from honcho.http.exceptions import UnprocessableEntityError

from mnemo_runtime.tokens import TokenCounter

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
LOCOMO = DATA / "locomo" / "locomo-dev5.json"
SECRET = "I am secretly learning to fly planes."


def context_tokens(ctx) -> int:
    """What a context costs, counted as the server counts."""
    counter = TokenCounter()
    fixed = [t for t in (ctx.peer_representation, "\n".join(ctx.peer_card or [])) if t]
    return (
        sum(m.token_count for m in ctx.messages)
        + (ctx.summary.token_count if ctx.summary else 0)
        + sum(counter.count_many(fixed))
    )


@pytest.fixture
def conversation(settle, mnemo, workspace):
    """Three LoCoMo sessions as one session, caroline observing melanie; nate elsewhere."""
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO}")
    conv = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")
    turns = [t for i in (1, 2, 3) for t in conv["conversation"][f"session_{i}"]]
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    caroline, melanie, nate = h.peer("caroline"), h.peer("melanie"), h.peer("nate")
    watching = SessionPeerConfig(observe_others=True)
    session = h.session("s1", peers=[(caroline, watching), melanie])
    session.add_messages(
        [
            MessageCreateParams(
                peer_id=t["speaker"].lower(), content=t["text"], metadata={"dia_id": t["dia_id"]}
            )
            for t in turns
        ]
    )
    elsewhere = h.session("s2", peers=[(caroline, watching), nate])
    elsewhere.add_messages([nate.message(SECRET)])
    settle(h)
    return h, session, caroline, melanie, nate, len(turns)


def test_get_context_respects_the_budget_and_the_summary_rule(conversation):
    _, session, _, _, _, n = conversation
    full = session.context(tokens=100_000, summary=False)
    assert len(full.messages) == n and full.summary is None
    assert [m.created_at for m in full.messages] == sorted(m.created_at for m in full.messages)

    for budget in (50, 300, 1_000, 4_000):
        ctx = session.context(
            tokens=budget,
            peer_target="melanie",
            peer_perspective="caroline",
            search_query="What does Melanie like to do with her kids?",
        )
        assert context_tokens(ctx) <= budget
        fixed = context_tokens(ctx) - sum(m.token_count for m in ctx.messages)
        fixed -= ctx.summary.token_count if ctx.summary else 0
        if ctx.summary is not None:
            assert ctx.summary.token_count <= 0.4 * (budget - fixed)
            covered = next(i for i, m in enumerate(full.messages) if m.id == ctx.summary.message_id)
            assert all(
                m.id not in {x.id for x in full.messages[: covered + 1]} for m in ctx.messages
            )
        # The newest messages, oldest first, contiguous up to the end of the session.
        ids = [m.id for m in full.messages]
        assert [m.id for m in ctx.messages] == ids[len(ids) - len(ctx.messages) :]

    summaries = session.summaries()
    if summaries.short_summary and summaries.long_summary:
        big = session.context(tokens=100_000)
        longer = summaries.long_summary.token_count > summaries.short_summary.token_count
        assert big.summary is not None
        assert big.summary.summary_type == ("long" if longer else "short")

    empty = session.context(tokens=1, peer_target="melanie")
    assert empty.messages == [] and empty.peer_representation is None
    with pytest.raises(UnprocessableEntityError, match="tokens"):
        session.context(tokens=100_001)


def test_representations_are_scoped_to_their_pair(conversation):
    _, _, caroline, melanie, nate, _ = conversation
    of_melanie = caroline.representation(target=melanie)
    of_nate = caroline.representation(target=nate)
    assert "fly" in of_nate
    assert "fly" not in of_melanie and "fly" not in melanie.representation()
    assert of_melanie.startswith("## ") and "observations" in of_melanie
    sliced = caroline.representation(target=melanie, search_query="painting", search_top_k=3)
    assert sliced.count("\n- ") + sliced.startswith("- ") <= 3
    ctx = caroline.context(target=melanie)
    assert (ctx.peer_id, ctx.target_id) == ("caroline", "melanie")
    assert ctx.representation == caroline.representation(target=melanie, max_conclusions=25)
    own = melanie.context()
    assert own.target_id == "melanie" and "fly" not in (own.representation or "")


def test_search_is_scoped_to_workspace_session_and_peer(conversation):
    h, session, caroline, _, nate, _ = conversation
    hits = session.search("adoption agencies", limit=5)
    assert hits and all(m.session_id == "s1" for m in hits)
    assert any("adopt" in m.content.lower() for m in hits)
    assert all(m.peer_id == "nate" for m in nate.search("planes"))
    assert any(m.content == SECRET for m in h.search("fly planes"))
    assert not any(m.content == SECRET for m in session.search("fly planes"))
    assert all(m.peer_id == "caroline" for m in caroline.search("support group", limit=3))


def test_get_context_names_what_does_not_exist(mnemo, workspace, admin):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    h.session("s").add_peers([h.peer("ann")])
    url = f"{mnemo.url}/v3/workspaces/{workspace}/sessions"

    def refused(session: str, **query: str) -> tuple[int, str, str]:
        r = httpx.get(f"{url}/{session}/context", params=query, headers=admin, timeout=30)
        return r.status_code, r.json()["field"], r.json()["detail"]

    assert httpx.get(f"{url}/s/context", params={"peer_target": "ann"}, headers=admin).is_success
    # The session first, then each peer the read concerns.
    assert refused("nope", peer_target="bob") == (404, "session_id", "session 'nope' not found")
    assert refused("s", peer_target="bob") == (404, "peer_id", "peer 'bob' not found")
    assert refused("s", peer_target="ann", peer_perspective="carl") == (
        404,
        "peer_id",
        "peer 'carl' not found",
    )
