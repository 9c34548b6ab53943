"""Erasure leaves nothing behind: a canary posted, derived and summarised, then deleted (a
message, a session, a workspace in turn), is found in no Postgres table, no vector payload and
no JetStream store file; the same ids made again hold no memory."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from honcho import Honcho

from mnemo_runtime.stack import LocalNats, free_port

FILLER = [
    "I walked the dog along the river this morning.",
    "The bakery on the corner sells good rye bread.",
    "We are planning a trip to the mountains in spring.",
]


def _canary() -> str:
    # Lowercase letters then digits: the lexicon's stemmer leaves it whole, so it is findable.
    return f"zq{uuid.uuid4().hex[:10]}x{uuid.uuid4().int % 10**6:06d}"


def _in_postgres(url: str, canary: str) -> list[str]:
    """Every table (of every schema but the catalogue's) with a row holding the canary, as
    text or as bytes (bytea renders as hex)."""
    hexed = canary.encode().hex()
    found = []
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE'"
            " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        assert len(tables) > 15, tables
        for schema, table in tables:
            n = conn.execute(
                f'SELECT count(*) FROM "{schema}"."{table}" t'
                " WHERE t::text LIKE %s OR t::text LIKE %s",
                (f"%{canary}%", f"%{hexed}%"),
            ).fetchone()
            if n and n[0]:
                found.append(f"{schema}.{table}")
    return found


def _in_files(root: Path, canary: str) -> list[str]:
    needle = canary.encode()
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    ]


class _Stack:
    def __init__(self, db: str, nats_root: Path, state: Path) -> None:
        self.db, self.nats_root, self.state = db, nats_root, state

    def where(self, canary: str) -> list[str]:
        return [
            *_in_postgres(self.db, canary),
            *(f"jetstream:{f}" for f in _in_files(self.nats_root / "jetstream", canary)),
            *(f"state:{f}" for f in _in_files(self.state, canary)),
        ]


@pytest.fixture
def stack(tmp_path: Path, fresh_database: str, spawn, keys):  # type: ignore[no-untyped-def]
    nats = LocalNats(tmp_path / "nats", free_port())
    url = nats.start()
    proc = spawn(
        url,
        fresh_database,
        MNEMO_SUMMARIZER_MESSAGES_PER_SHORT_SUMMARY="2",
        MNEMO_SUMMARIZER_MESSAGES_PER_LONG_SUMMARY="4",
    )
    proc.start()
    yield proc, _Stack(fresh_database, tmp_path / "nats", proc.log.parent / f"state-{proc.port}")
    proc.stop()
    nats.stop()


def _post(h: Honcho, session: str, canary: str, speaker: str = "alice") -> str:
    """The canary among filler, in ``session``; the canary message's id."""
    alice, bob = h.peer(speaker), h.peer("bob")
    s = h.session(session, peers=[alice, bob])
    sent = s.add_messages(
        [
            alice.message(f"My locker code word is {canary} and nobody else knows it."),
            *(bob.message(t) for t in FILLER),
        ]
    )
    return sent[0].id


def _derived_and_summarised(stack: _Stack, canary: str, settle, h: Honcho, until) -> None:  # type: ignore[no-untyped-def]
    settle(h)
    until(lambda: {"public.observations", "public.summaries"} <= set(stack.where(canary)), 60)
    places = set(stack.where(canary))
    # The scanner sees the canary wherever it is: what follows could fail.
    assert {"public.messages", "public.search_terms"} <= places, places
    assert any(p.startswith("jetstream:") for p in places), places


def test_a_deleted_canary_leaves_no_byte_behind(stack, settle, until):  # type: ignore[no-untyped-def]
    proc, where = stack
    ws = f"ws-{uuid.uuid4().hex[:10]}"
    h = Honcho(base_url=proc.url, workspace_id=ws, max_retries=0, timeout=60)
    base = f"{proc.url}/v3/workspaces/{ws}"
    kept = "The bakery on the corner sells good rye bread."

    # 1. One message.
    c1 = _canary()
    mid = _post(h, "one", c1)
    _derived_and_summarised(where, c1, settle, h, until)
    for _ in range(2):  # idempotent
        r = httpx.delete(f"{base}/sessions/one/messages/{mid}", headers=proc.headers)
        assert r.status_code == 202, r.text
    until(lambda: where.where(c1) == [], 60)
    assert httpx.get(f"{base}/sessions/one/messages/{mid}", headers=proc.headers).status_code == 404
    remaining = [m.content for m in h.session("one").messages()]
    assert kept in remaining and not any(c1 in m for m in remaining)
    assert not any(c1 in c.content for c in h.peer("alice").conclusions.list())
    assert not any(c1 in m.content for m in h.search(c1))
    assert (
        httpx.delete(f"{base}/sessions/one/messages/nope", headers=proc.headers).status_code == 404
    )

    # A peer: its messages and every representation of or by it.
    cp = _canary()
    _post(h, "four", cp, speaker="carol")
    _derived_and_summarised(where, cp, settle, h, until)
    for _ in range(2):
        assert httpx.delete(f"{base}/peers/carol", headers=proc.headers).status_code == 202
    until(lambda: where.where(cp) == [], 60)
    assert "carol" not in [p.id for p in h.peers()]
    assert kept in [m.content for m in h.session("one").messages()]

    # 2. A session; made again, it holds nothing.
    c2 = _canary()
    _post(h, "two", c2)
    _derived_and_summarised(where, c2, settle, h, until)
    for _ in range(2):
        assert httpx.delete(f"{base}/sessions/two", headers=proc.headers).status_code == 202
    until(lambda: where.where(c2) == [], 60)
    again = h.session("two", peers=[h.peer("alice")])
    assert list(again.messages()) == []
    assert again.summaries().short_summary is None
    assert c2 not in str(again.context(peer_target="alice", search_query="locker code"))
    # What the other session holds is still there.
    assert kept in [m.content for m in h.session("one").messages()]

    # 3. The workspace, with a crash right after the delete is accepted: it finishes on restart.
    c3 = _canary()
    _post(h, "three", c3)
    _derived_and_summarised(where, c3, settle, h, until)
    assert httpx.delete(f"{proc.url}/v3/workspaces/{ws}", headers=proc.headers).status_code == 202
    proc.kill()
    proc.start()
    until(lambda: where.where(c3) == [], 90)
    assert (
        httpx.delete(f"{proc.url}/v3/workspaces/{ws}", headers=proc.headers).status_code == 202
    )  # idempotent
    for canary in (c1, cp, c2, c3):
        assert where.where(canary) == [], canary
    with psycopg.connect(where.db) as conn:
        done = conn.execute(
            "SELECT kind, events_erased > 0 FROM erasures WHERE finished_at IS NOT NULL"
            " ORDER BY seq"
        ).fetchall()
    assert [k for k, _ in done][:4] == ["message", "peer", "session", "workspace"] and all(
        n for _, n in done[:4]
    ), done
    # The same ids made again: empty memory.
    h2 = Honcho(base_url=proc.url, workspace_id=ws, max_retries=0, timeout=60)
    alice = h2.peer("alice")
    s = h2.session("three", peers=[alice])
    assert list(s.messages()) == []
    assert list(alice.conclusions.list()) == []
    assert h2.search("locker code") == []
    assert alice.get_card() in (None, [])
    assert c3 not in str(s.context(peer_target="alice", search_query="locker code"))
