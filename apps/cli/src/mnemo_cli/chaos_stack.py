"""The stack a fault run works on, and the faults done to it.

It has a state folder and ports of its own (picked free when the run starts), so it never
disturbs a stack the user runs. It is started, and a killed process started again, the way a
supervisor would: ``mnemo up`` in a child process, which starts what is missing. NATS and
Postgres are the local servers ``up`` starts (stopped and started again here, their stores
kept); when NATS_URL / DATABASE_URL name servers of someone else's, those are left alone.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from mnemo_runtime.stack import (
    ADMIN_KEY_FILE,
    LocalNats,
    LocalPostgres,
    free_port,
    pid_alive,
    read_pid,
    recorded_stack,
)

# The processes of ``up``'s layout, in the order they are killed.
PROCESSES = ("api", "projector", "read", "memory")
# Settings that would tie the run's stack to another one (its keys, its layout, its ports).
_NOT_INHERITED = (
    "MNEMO_COMPONENTS",
    "MNEMO_AUTH_KEYS_DIR",
    "HONCHO_API_KEY",
    "MNEMO_METRICS_PORT",
    "MNEMO_NATS_PORT",
    "MNEMO_PG_PORT",
    "MNEMO_GATEWAY_PORT",
    "MNEMO_GRPC_PORT",
)


class StackFailed(RuntimeError):
    """``mnemo up`` did not bring the stack up (its output is in the supervisor's log)."""


@dataclass
class ChaosStack:
    """A local stack under ``state``, on ports of its own, driven through ``mnemo up``/``down``."""

    state: Path
    env: dict[str, str]

    @classmethod
    def fresh(cls, state: Path, environ: Mapping[str, str]) -> ChaosStack:
        """A stack under an emptied ``state`` (what an earlier run left there stopped first)."""
        state = state.resolve()
        env = {k: v for k, v in environ.items() if k not in _NOT_INHERITED}
        env |= {
            "MNEMO_STATE_DIR": str(state),
            "MNEMO_AUTH": "on",
            "MNEMO_NATS_PORT": str(free_port()),
            "MNEMO_PG_PORT": str(free_port()),
            "MNEMO_GATEWAY_PORT": str(free_port()),
            "MNEMO_GRPC_PORT": str(free_port()),
        }
        stack = cls(state, env)
        if state.exists():
            stack.down()
            shutil.rmtree(state)
        return stack

    @property
    def url(self) -> str:
        """The gateway's URL."""
        return f"http://127.0.0.1:{self.env['MNEMO_GATEWAY_PORT']}"

    @property
    def external_nats(self) -> bool:
        return bool(self.env.get("NATS_URL"))

    @property
    def external_database(self) -> bool:
        return bool(self.env.get("DATABASE_URL"))

    @property
    def nats(self) -> LocalNats:
        return LocalNats(self.state / "nats", int(self.env["MNEMO_NATS_PORT"]))

    @property
    def postgres(self) -> LocalPostgres:
        return LocalPostgres(self.state / "postgres", int(self.env["MNEMO_PG_PORT"]))

    @property
    def database_url(self) -> str:
        """The database the stack uses (as ``up`` recorded it)."""
        return recorded_stack(self.state)["database_url"]

    @property
    def nats_url(self) -> str:
        """The NATS server the stack uses (as ``up`` recorded it)."""
        return recorded_stack(self.state)["nats_url"]

    def admin_key(self) -> str:
        """The admin key ``up`` made for this stack."""
        return (self.state / ADMIN_KEY_FILE).read_text().strip()

    def _mnemo(self, command: str, timeout: float) -> None:
        (self.state / "logs").mkdir(parents=True, exist_ok=True)
        with (self.state / "logs" / "supervisor.log").open("ab") as out:
            out.write(f"--- mnemo {command} at {time.strftime('%H:%M:%S')}\n".encode())
            out.flush()
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "mnemo_cli", command],
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    timeout=timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired as err:
                raise StackFailed(f"mnemo {command} did not finish in {timeout:.0f} s") from err
        if done.returncode != 0:
            raise StackFailed(f"mnemo {command} exited with {done.returncode}")

    def up(self, timeout: float = 180.0) -> None:
        """Start what is missing and wait until it serves (``mnemo up``)."""
        self._mnemo("up", timeout)

    def down(self) -> None:
        """Stop everything (``mnemo down``)."""
        self._mnemo("down", 120.0)

    def pids(self) -> dict[str, int]:
        """The live Mnemo processes of the stack, by name."""
        run = self.state / "run"
        return {n: pid for n in PROCESSES if (pid := read_pid(run / f"{n}.pid")) is not None}

    def kill(self, name: str) -> int:
        """SIGKILL process ``name`` (no shutdown code runs); its pid, once it is gone."""
        pid = self.pids()[name]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_alive(pid):
            if time.monotonic() > deadline:
                raise StackFailed(f"{name} (pid {pid}) outlived SIGKILL by 10 s")
            time.sleep(0.02)
        return pid

    def restart_nats(self, outage_s: float) -> None:
        """Stop nats-server, leave it down ``outage_s``, start it again (JetStream's files kept)."""
        nats = self.nats
        nats.stop()
        time.sleep(outage_s)  # the outage itself: how long the servers are away
        nats.start()

    def restart_postgres(self, outage_s: float) -> None:
        """Stop Postgres (fast shutdown), leave it down ``outage_s``, start it again."""
        pg = self.postgres
        pg.stop()
        time.sleep(outage_s)
        pg.start()

    async def ready(self, client: httpx.AsyncClient) -> tuple[bool, str]:
        """Whether ``/ready`` answers 200 now, and what it said."""
        try:
            r = await client.get(f"{self.url}/ready", timeout=5)
        except httpx.HTTPError as err:
            return False, repr(err)
        return r.status_code == 200, r.text
