"""Distributed mode: each service in its own process, the same handlers as all-in-one."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
from honcho import Honcho

from mnemo_runtime.stack import free_port


def test_services_run_as_separate_processes(own_nats, fresh_database, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "NATS_URL": own_nats,
        "DATABASE_URL": fresh_database,
        "MNEMO_GATEWAY_PORT": str(port),
        "MNEMO_STATE_DIR": str(tmp_path / "state"),
    }
    procs = []
    try:
        for service in ("projector", "ingest", "gateway"):
            log = (tmp_path / f"{service}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", f"mnemo_{service}"], env=env, stdout=log, stderr=log
                )
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert all(p.poll() is None for p in procs), [
                (tmp_path / f"{s}.log").read_text()[-2000:]
                for s in ("projector", "ingest", "gateway")
            ]
            time.sleep(0.1)
        else:
            raise AssertionError("distributed stack not ready")
        h = Honcho(base_url=url, workspace_id="dist", max_retries=0)
        s = h.session("s")
        s.add_messages([h.peer("a").message("one"), h.peer("b").message("two")])
        assert [m.content for m in s.messages()] == ["one", "two"]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(15)
            assert p.returncode == 0, p.args
