"""Dreams end to end: SDK -> deriver (local reasoner) -> schedule_dream -> dreamer -> retrieval."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import nats
import psycopg
import pytest
from honcho import Honcho
from honcho.api_types import MessageCreateParams
from psycopg.rows import dict_row

from mnemo_runtime import direct

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
BEAM = DATA / "beam-100k" / "1"


def rows(database_url: str, sql: str, *params: object) -> list[dict[str, object]]:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


async def _last_seq(nats_url: str, subject: str) -> int:
    nc = await nats.connect(nats_url)
    try:
        found = await direct.last(nc, subject)
        return found.seq if found else 0
    finally:
        await nc.close()


def dream(
    h: Honcho, database_url: str, nats_url: str, workspace: str, until, peer: str = "user"
) -> dict:
    """Ask for a dream over (peer, peer) and wait for the dreamer to record its completion."""
    h.schedule_dream(observer=peer)
    until(
        lambda: rows(
            database_url,
            "SELECT 1 FROM dream_schedule WHERE workspace = %s AND observer = %s"
            " AND observed = %s AND last_dream_at IS NOT NULL",
            workspace,
            peer,
            peer,
        ),
        timeout=120,
    )
    # The dream's edits are in the log before its DreamCompleted; wait until the memory
    # projection has applied the newest of them.
    last = asyncio.run(_last_seq(nats_url, f"mnemo.evt.{workspace}.*.obs.{peer}.{peer}"))
    until(
        lambda: rows(
            database_url,
            "SELECT 1 FROM projection_positions WHERE name = 'memory' AND seq >= %s",
            last,
        ),
        timeout=60,
    )
    return rows(
        database_url,
        "SELECT * FROM dream_schedule WHERE workspace = %s AND observer = %s AND observed = %s",
        workspace,
        peer,
        peer,
    )[0]


def test_a_knowledge_update_supersedes_the_old_value(
    settle, mnemo, nats_url, workspace, database_url, until
):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    user, assistant = h.peer("user"), h.peer("assistant")
    session = h.session("s1")
    session.add_peers([user, assistant])
    session.add_messages(
        [
            user.message("I live in Boston.", created_at=datetime(2024, 1, 5, tzinfo=UTC)),
            assistant.message("Boston is lovely in the fall."),
            user.message("I moved to Denver.", created_at=datetime(2024, 3, 5, tzinfo=UTC)),
        ]
    )
    settle(h)
    before = [c.content for c in user.conclusions.query("Where does the user live?", top_k=10)]
    assert any("Boston" in c for c in before), before

    dream(h, database_url, nats_url, workspace, until)

    old = rows(
        database_url,
        "SELECT id, deleted_at, delete_reason FROM observations WHERE workspace = %s"
        " AND level = 'explicit' AND content ILIKE %s",
        workspace,
        "%Boston%",
    )
    assert old and all(r["deleted_at"] is not None for r in old), old
    [update] = rows(
        database_url,
        "SELECT content, premise_ids FROM observations WHERE workspace = %s"
        " AND level = 'deductive' AND deleted_at IS NULL",
        workspace,
    )
    assert "Denver" in update["content"] and old[0]["id"] in update["premise_ids"]
    after = user.conclusions.query("Where does the user live?", top_k=10)
    assert all(c.id != old[0]["id"] for c in after)
    assert not any(c.content.endswith("lives in Boston") for c in after)
    assert any("Denver" in c.content for c in after)
    card = user.get_card()
    assert card and "Lives in: Denver" in card


@pytest.mark.skipif(not BEAM.exists(), reason=f"BEAM data not found at {BEAM}")
def test_a_beam_chat_dreams_with_the_local_reasoner(
    settle, mnemo, nats_url, workspace, database_url, until
):
    chat = json.loads((BEAM / "chat.json").read_text())
    questions = json.loads((BEAM / "probing_questions.json").read_text())
    wanted = {
        i
        for q in questions["knowledge_update"]
        for ids in q["source_chat_ids"].values()
        for i in ids
    }
    turns = [m for batch in chat for turn in batch["turns"] for m in turn]
    chosen = [m for i, m in enumerate(turns) if i < 200 or m.get("id") in wanted]
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    user, assistant = h.peer("user"), h.peer("assistant")
    session = h.session("beam-1")
    session.add_peers([user, assistant])
    for start in range(0, len(chosen), 50):
        session.add_messages(
            [
                MessageCreateParams(peer_id=m["role"], content=m["content"][:20_000])
                for m in chosen[start : start + 50]
            ]
        )
    settle(h, timeout=300)
    explicit = rows(
        database_url,
        "SELECT count(*) AS n FROM observations WHERE workspace = %s AND level = 'explicit'",
        workspace,
    )[0]["n"]

    row = dream(h, database_url, nats_url, workspace, until)
    assert row["last_dream_at"] is not None

    by_level = rows(
        database_url,
        "SELECT level, count(*) FILTER (WHERE deleted_at IS NULL) AS live,"
        " count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted FROM observations"
        " WHERE workspace = %s GROUP BY level ORDER BY level",
        workspace,
    )
    print(
        f"\nBEAM chat 1: {len(chosen)} messages, {explicit} explicit observations; after the dream: {by_level}"
    )
    deleted = rows(
        database_url,
        "SELECT id, content FROM observations WHERE workspace = %s AND deleted_at IS NOT NULL",
        workspace,
    )
    # BEAM's knowledge update "150 commits" -> "has now reached 165" is revised by the dream.
    assert any("150 commits" in str(d["content"]) for d in deleted), deleted
    assert rows(
        database_url,
        "SELECT 1 FROM observations WHERE workspace = %s AND level = 'deductive'"
        " AND deleted_at IS NULL AND content LIKE %s",
        workspace,
        "%commits now 165%",
    )
    for d in deleted[:5]:
        # A superseded value leaves retrieval, and the belief that replaced it cites it.
        hits = user.conclusions.query(str(d["content"]), top_k=10)
        assert all(c.id != d["id"] for c in hits)
        assert rows(
            database_url,
            "SELECT 1 FROM observations WHERE workspace = %s AND deleted_at IS NULL"
            " AND %s = ANY(premise_ids)",
            workspace,
            d["id"],
        )
