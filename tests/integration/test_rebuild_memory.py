"""``mnemo rebuild --memory`` drops what memory formation projected and replays the log to the
very same state: the memory projection's output depends on the log alone, and what an erasure
took stays taken."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg

from mnemo_projector.tables import MEMORY_TABLES

# Everything memory formation projects, vectors and message passages included.
TABLES = (*MEMORY_TABLES, "message_passages", "observation_vectors")
CHAT = [
    ("ann", "I moved to Lisbon last spring."),
    ("bob", "How do you like it there?"),
    ("ann", "I work as a nurse at the city hospital."),
    ("bob", "That sounds demanding."),
    ("ann", "I have two dogs called Rex and Luna."),
    ("bob", "Lovely names."),
    ("ann", "I started learning the cello in May."),
    ("bob", "I play the piano myself."),
]
ERASED = "Luna"  # in the fifth message, the one erased


# A posting's ``impact`` is its BM25 weight at the collection's average length when it was
# written (see ``mnemo_projector.lexicon``): it orders the postings, and so depends on how the
# log was cut into batches; queries score with ``tf``, ``dl`` and the current statistics, which
# the comparison includes.
WRITE_TIME = {"search_terms": ["impact"]}
# Embeddings are compared apart, to a tolerance: MiniLM's floats vary in their last bits with
# the other texts of the batch they were computed in.
EMBEDDED = ("message_passages", "observation_vectors")


def snapshot(database_url: str) -> dict[str, list[str]]:
    """Every row of every memory table, as text, in a fixed order."""
    with psycopg.connect(database_url) as conn:
        return {
            t: [
                r[0]
                for r in conn.execute(
                    f"SELECT (to_jsonb(x) - %s::text[])::text FROM {t} x ORDER BY 1",
                    (WRITE_TIME.get(t, []) + (["embedding"] if t in EMBEDDED else []),),
                )
            ]
            for t in TABLES
        }


def embeddings(database_url: str) -> dict[str, list[list[float]]]:
    """Each embedded table's vectors, in the order of its rows without them."""
    with psycopg.connect(database_url) as conn:
        return {
            t: [
                json.loads(r[1])
                for r in conn.execute(
                    f"SELECT (to_jsonb(x) - 'embedding')::text, embedding::text FROM {t} x"
                    " ORDER BY 1"
                )
            ]
            for t in EMBEDDED
        }


def erased(database_url: str) -> bool:
    """Whether the erasure is done and nothing memory holds (nor the message) names ``ERASED``."""
    with psycopg.connect(database_url) as conn:
        done = conn.execute("SELECT bool_and(finished_at IS NOT NULL) FROM erasures").fetchone()
        kept = conn.execute(
            "SELECT count(*) FROM messages WHERE content LIKE %s", (f"%{ERASED}%",)
        ).fetchone()
    left = [t for t, rows in snapshot(database_url).items() if any(ERASED in r for r in rows)]
    return bool(done and done[0]) and kept is not None and kept[0] == 0 and not left


def settled(url: str, workspace: str, headers: dict[str, str]) -> bool:
    status = httpx.get(f"{url}/v3/workspaces/{workspace}/queue/status", headers=headers).json()
    return status["total_work_units"] > 0 and (
        status["pending_work_units"] + status["in_progress_work_units"] == 0
    )


def replay_progress(stderr: str, stdout: str) -> None:
    """The replay said, before it began, how many events it had to apply (those it reports
    applying at the end), and each report after counts up towards them."""
    (applied,) = re.findall(r"replayed the memory projections: (\d+) events", stdout)
    lines = [line for line in stderr.splitlines() if line.startswith("rebuild: ")]
    assert (
        lines and lines[0] == f"rebuild: replaying the memory projections: {int(applied):,} events"
    )
    done = [
        (int(a.replace(",", "")), int(b.replace(",", "")))
        for a, b in (
            re.findall(r"^rebuild: ([\d,]+) of ([\d,]+) events applied", line)[0]
            for line in lines[1:]
        )
    ]
    assert all(whole == int(applied) for _, whole in done), done
    assert [d for d, _ in done] == sorted(d for d, _ in done), done


def test_rebuild_memory_replays_to_an_identical_state(
    own_nats: str,
    fresh_database: str,
    spawn: object,
    until: object,
    tmp_path: Path,
    admin: dict[str, str],
) -> None:
    proc = spawn(  # type: ignore[operator]
        own_nats,
        fresh_database,
        MNEMO_SUMMARIZER_MESSAGES_PER_SHORT_SUMMARY="2",
        MNEMO_SUMMARIZER_MESSAGES_PER_LONG_SUMMARY="4",
    ).start(timeout=180)
    ws = "rebuilt"
    base = f"{proc.url}/v3/workspaces"
    httpx.post(base, json={"id": ws}, headers=admin).raise_for_status()
    httpx.post(
        f"{base}/{ws}/sessions", json={"id": "s", "peers": {"ann": {}, "bob": {}}}, headers=admin
    ).raise_for_status()
    posted = []
    for i in range(0, len(CHAT), 2):
        body = {"messages": [{"peer_id": p, "content": c} for p, c in CHAT[i : i + 2]]}
        r = httpx.post(f"{base}/{ws}/sessions/s/messages", json=body, headers=admin)
        posted += [m["id"] for m in r.raise_for_status().json()]
    httpx.post(
        f"{base}/{ws}/schedule_dream", json={"observer": "ann", "observed": "ann"}, headers=admin
    ).raise_for_status()
    until(lambda: settled(proc.url, ws, admin), timeout=120)  # type: ignore[operator]
    formed = snapshot(fresh_database)
    assert any(ERASED in row for t in ("observations", "summaries") for row in formed[t])
    # One message erased, with what was formed from it: the replay must not bring it back.
    r = httpx.delete(f"{base}/{ws}/sessions/s/messages/{posted[4]}", headers=admin)
    assert r.status_code == 202, r.text
    until(lambda: erased(fresh_database), timeout=60)  # type: ignore[operator]
    before, vectors = snapshot(fresh_database), embeddings(fresh_database)
    assert before["observations"] and before["message_passages"] and before["summaries"]
    assert len(before["summaries"]) < len(formed["summaries"])
    # The queue counted the dream asked for: settled means it ran to its end.
    (dream,) = before["dreams"]
    assert json.loads(dream)["completed_seq"] is not None
    proc.stop()

    env = {
        **os.environ,
        "NATS_URL": own_nats,
        "DATABASE_URL": fresh_database,
        "MNEMO_STATE_DIR": str(tmp_path / "rebuild-state"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "mnemo_cli", "rebuild", "--memory", "--progress-every", "0.05"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replayed the memory projections" in done.stdout
    replay_progress(done.stderr, done.stdout)
    after = snapshot(fresh_database)
    for table in TABLES:
        assert after[table] == before[table], table
    assert not [t for t, rows in after.items() if any(ERASED in row for row in rows)]
    for table, replayed in embeddings(fresh_database).items():
        assert len(replayed) == len(vectors[table]) > 0, table
        for a, b in zip(replayed, vectors[table], strict=True):
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-3, table
