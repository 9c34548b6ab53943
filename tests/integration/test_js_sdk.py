"""The official TypeScript SDK, @honcho-ai/sdk (pinned in tests/js), against a running Mnemo.

``make setup`` installs it with npm from tests/js/package-lock.json; without node and npm on the
machine this test is skipped, and says why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from honcho import Honcho

JS = Path(__file__).resolve().parents[1] / "js"
NODE = shutil.which("node")
SDK = JS / "node_modules" / "@honcho-ai" / "sdk" / "package.json"

pytestmark = pytest.mark.skipif(
    NODE is None or not SDK.exists(),
    reason="needs node and @honcho-ai/sdk in tests/js/node_modules (make setup, with npm)",
)


def test_the_typescript_sdk_writes_reads_and_asks(mnemo, workspace):
    assert NODE is not None
    done = subprocess.run(
        [NODE, "round_trip.mjs", mnemo.url, workspace],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert json.loads(SDK.read_text())["version"] == "2.5.0"

    sent = out["sent"]
    assert [m["peer"] for m in sent] == ["alice", "bob", "alice"]
    assert all(m["tokens"] > 0 for m in sent)
    assert sent[2]["at"].startswith("2023-05-08T13:56:00")
    ids = [m["id"] for m in sent]
    assert [m["id"] for m in out["listed"]] == ids
    assert out["reversed"] == ids[::-1]
    assert out["by_bob"] == ["Nice! How is the weather?"]
    assert out["got"] == "I moved to Lisbon last week."
    assert out["updated"] == {"flag": True}
    assert out["session_peers"] == ["alice", "bob"]
    assert out["bob_observes_others"] is True and out["bob_observes_others_after"] is False
    assert out["alice_metadata"] == {"role": "user"}
    assert out["session_metadata"] == {"topic": "work"}
    assert out["peers"] == ["alice", "bob"] and out["sessions"] == ["chat-1"]

    # Refusals reach the SDK as its error classes, with the status and the field named.
    assert out["unknown_message"]["status"] == 404
    assert out["unknown_message"]["error"] == "NotFoundError"
    assert out["empty_batch"]["status"] == 422 and "messages" in out["empty_batch"]["message"]
    assert out["too_many"]["status"] == 413 and "at most 100" in out["too_many"]["message"]
    assert out["too_long"]["status"] == 422
    assert "messages.0.content" in out["too_long"]["message"]

    # Memory formed from what the TypeScript SDK posted.
    queue = out["queue"]
    assert queue["totalWorkUnits"] > 0 and queue["pendingWorkUnits"] == 0
    assert "nurse" in out["chat"]
    assert out["context_messages"][-1] == "I work as a nurse at the city hospital."

    # The dream asked for is one more unit, counted as soon as it is asked for, and the wait on
    # the queue ended with it run (complete, not merely out of sight).
    formed = queue["totalWorkUnits"]
    assert out["dream_queued"]["totalWorkUnits"] == formed + 1
    dreamt = out["dream_queue"]
    assert dreamt["totalWorkUnits"] == dreamt["completedWorkUnits"] == formed + 1
    # A client made for a workspace that did not exist sets its metadata (get-or-create).
    assert out["fresh_metadata"] == {"plan": "team"}

    # The Python SDK reads the same state: nothing of the refused batches was written.
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    stored = list(h.session("chat-1").messages())
    assert [m.id for m in stored] == ids
    assert stored[1].metadata == {"flag": True}
