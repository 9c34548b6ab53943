"""``mnemo up`` / ``down`` / ``status``: the embedded default stack on this machine.

NATS and Postgres are started from their wheels unless NATS_URL / DATABASE_URL are set; then the
all-in-one process is started detached. Every PID lives under ``$MNEMO_STATE_DIR/run``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import LocalNats, LocalPostgres, read_pid, stop_pid


def _port(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _paths(state: Path) -> tuple[LocalNats, LocalPostgres, Path]:
    state = state.resolve()
    nats = LocalNats(state / "nats", _port("MNEMO_NATS_PORT", 4222))
    pg = LocalPostgres(state / "postgres", _port("MNEMO_PG_PORT", 54329))
    return nats, pg, state / "run" / "mnemo.pid"


def gateway_url() -> str:
    """Where the local gateway listens."""
    return f"http://127.0.0.1:{_port('MNEMO_GATEWAY_PORT', 8000)}"


def up(settings: InfraSettings, timeout: float = 90.0) -> str:
    """Start what is missing; return the gateway URL once it reports ready."""
    nats, pg, pidfile = _paths(settings.state_dir)
    env = dict(os.environ)
    env["NATS_URL"] = settings.nats_url or nats.start()
    env["DATABASE_URL"] = settings.database_url or pg.start()
    print(f"NATS      {env['NATS_URL']}")
    print(f"Postgres  {env['DATABASE_URL']}")
    url = gateway_url()
    if read_pid(pidfile) is None:
        pidfile.parent.mkdir(parents=True, exist_ok=True)
        log = settings.state_dir.resolve() / "logs" / "mnemo.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env.setdefault("MNEMO_GATEWAY_PORT", str(_port("MNEMO_GATEWAY_PORT", 8000)))
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mnemo_cli", "serve"],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            )  # fmt: skip
        pidfile.write_text(str(proc.pid))
        print(f"Mnemo     pid {proc.pid}, logs in {log}")
    _wait_ready(url, timeout, pidfile)
    print(f"Gateway   {url}  (ready; OpenAPI at {url}/openapi.json)")
    return url


def _wait_ready(url: str, timeout: float, pidfile: Path) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if read_pid(pidfile) is None:
            raise SystemExit(f"mnemo exited during start-up; see its log. Last readiness: {last}")
        try:
            r = httpx.get(f"{url}/ready", timeout=2)
            if r.status_code == 200:
                return
            last = r.text
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(0.2)
    raise SystemExit(f"mnemo not ready after {timeout:.0f}s: {last}")


def down(settings: InfraSettings) -> None:
    """Stop the all-in-one process, then the local NATS and Postgres."""
    nats, pg, pidfile = _paths(settings.state_dir)
    for name, stopped in (
        ("mnemo", stop_pid(pidfile)),
        ("nats", nats.stop()),
        ("postgres", pg.stop()),
    ):
        print(f"{name:9} {'stopped' if stopped else 'not running'}")


def status(settings: InfraSettings) -> None:
    """Print what runs."""
    nats, pg, pidfile = _paths(settings.state_dir)
    for name, pid in (
        ("mnemo", read_pid(pidfile)),
        ("nats", read_pid(nats.pidfile)),
        ("postgres", read_pid(pg.pidfile)),
    ):
        print(f"{name:9} {'pid ' + str(pid) if pid else 'not running'}")
