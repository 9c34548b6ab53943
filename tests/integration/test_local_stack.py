"""``mnemo up``: the default local layout: the api, the projector, the reads and memory formation
in four processes, the reads at normal priority and memory formation at idle priority."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
from honcho import Honcho

from mnemo_runtime.stack import free_port, read_pid

NAMES = ("api", "projector", "read", "memory")


def _mnemo(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mnemo_cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_up_runs_the_write_path_reads_and_memory_formation_as_four_processes(
    own_nats, fresh_database, tmp_path, settle
):
    port = free_port()
    state = tmp_path / "state"
    env = {
        **os.environ,
        "NATS_URL": own_nats,
        "DATABASE_URL": fresh_database,
        "MNEMO_GATEWAY_PORT": str(port),
        "MNEMO_GRPC_PORT": str(free_port()),
        "MNEMO_STATE_DIR": str(state),
    }
    env.pop("MNEMO_COMPONENTS", None)
    # The local default: keys of the stack's own, made on first start.
    for name in ("MNEMO_AUTH", "MNEMO_AUTH_KEYS_DIR", "HONCHO_API_KEY"):
        env.pop(name, None)
    try:
        _mnemo("up", env=env)
        admin = state / "admin.key"
        assert admin.stat().st_mode & 0o777 == 0o600
        key = admin.read_text().strip()
        assert _mnemo("key", env=env).strip() == key
        base = f"http://127.0.0.1:{port}/v3/workspaces"
        assert httpx.post(f"{base}/list").status_code == 401
        assert (
            httpx.post(f"{base}/list", headers={"Authorization": f"Bearer {key}"}).status_code
            == 200
        )
        scoped = _mnemo("key", "--workspace", "up", "--session", "s", env=env).strip()
        bearer = {"Authorization": f"Bearer {scoped}"}
        assert httpx.post(f"{base}/up/sessions/s/messages/list", headers=bearer).status_code == 404
        assert httpx.post(f"{base}/up/peers/list", headers=bearer).status_code == 403
        pids = {name: read_pid(state / "run" / f"{name}.pid") for name in NAMES}
        assert all(pids.values()) and len(set(pids.values())) == 4, pids
        # Memory formation yields the cores to the write path and to the reads.
        policies = {name: os.sched_getscheduler(pid) for name, pid in pids.items() if pid}
        assert policies == {
            "api": os.SCHED_OTHER,
            "projector": os.SCHED_OTHER,
            "read": os.SCHED_OTHER,
            "memory": os.SCHED_IDLE,
        }
        # ... and so does its scheduling group, which the kernel weighs before the policy.
        if Path("/proc/self/autogroup").exists():
            groups = {
                name: int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
                for name, pid in pids.items()
            }
            assert groups == {"api": 0, "projector": 0, "read": 0, "memory": 19}, groups
        assert json.loads((state / "run" / "stack.json").read_text()) == {
            "nats_url": own_nats,
            "database_url": fresh_database,
            "gateway_url": f"http://127.0.0.1:{port}",
        }
        status = _mnemo("status", env=env)
        assert all(name in status for name in NAMES), status
        # Running and asked when ready: so it says, with each projection's distance behind.
        assert "ready     yes" in status.splitlines(), status
        assert re.search(r"^behind    .*: .*memory \d", status, re.M), status

        h = Honcho(
            base_url=f"http://127.0.0.1:{port}", workspace_id="up", max_retries=0, api_key=key
        )
        alice = h.peer("alice")
        session = h.session("s")
        session.add_messages([alice.message("I work as a nurse at the city hospital in Lisbon.")])
        settle(h)
        # Observations and vectors come from the memory process; the read process, which
        # writes nothing, searches them.
        hits = alice.conclusions.query("Where does Alice work?", top_k=3)
        assert hits and "nurse" in hits[0].content
        assert "nurse" in h.search("hospital", limit=1)[0].content
        assert "nurse" in str(alice.chat("Where does Alice work?"))
        log = (state / "logs" / "api.log").read_text()
        assert '"components": ["gateway", "ingest", "grpc"]' in log
        read = (state / "logs" / "read.log").read_text()
        assert '"components": ["context", "dialectic"]' in read
        # A process of another layout (an earlier version's, say) is stopped by `down` too.
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        (state / "run" / "ingest.pid").write_text(str(other.pid))
    finally:
        _mnemo("down", env=env)
    assert not any(read_pid(Path(state / "run" / f"{n}.pid")) for n in (*NAMES, "ingest"))
    assert not (state / "run" / "stack.json").exists()
    assert other.wait(timeout=30) is not None
