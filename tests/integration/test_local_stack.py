"""``mnemo up``: the default local layout: the api, the projector, the reads and memory formation
in four processes, the reads at normal priority and memory formation at idle priority."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from honcho import Honcho

from mnemo_runtime.stack import free_port, read_pid

NAMES = ("api", "projector", "read", "memory")


def _mnemo(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mnemo_cli", *args],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
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
    try:
        _mnemo("up", env=env)
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
        assert json.loads((state / "run" / "stack.json").read_text()) == {
            "nats_url": own_nats, "database_url": fresh_database,
            "gateway_url": f"http://127.0.0.1:{port}",
        }  # fmt: skip
        status = _mnemo("status", env=env)
        assert all(name in status for name in NAMES), status

        h = Honcho(base_url=f"http://127.0.0.1:{port}", workspace_id="up", max_retries=0)
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
