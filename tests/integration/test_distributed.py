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
    procs: list[subprocess.Popen[bytes]] = []
    url = f"http://127.0.0.1:{port}"

    def start(service: str) -> None:
        log = (tmp_path / f"{service}.log").open("wb")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", f"mnemo_{service}"], env=env, stdout=log, stderr=log
            )
        )

    def ready() -> httpx.Response | None:
        assert all(p.poll() is None for p in procs), [
            (tmp_path / f"{s}.log").read_text()[-2000:] for s in ("projector", "ingest", "gateway")
        ]
        try:
            return httpx.get(f"{url}/ready", timeout=3)
        except httpx.HTTPError:
            return None

    def wait_for(check: object) -> httpx.Response:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = ready()
            if r is not None and check(r):  # type: ignore[operator]
                return r
            time.sleep(0.1)
        raise AssertionError(f"distributed stack never got there: {r and r.text}")

    try:
        start("projector")
        start("gateway")
        # Without ingest nothing can be written: not ready, and it says why.
        r = wait_for(lambda r: "ingest" in r.json().get("problems", {}))
        assert r.status_code == 503
        start("ingest")
        wait_for(lambda r: r.status_code == 200)
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
