"""``mnemo up`` / ``down`` / ``status``: the embedded default stack on this machine.

NATS and Postgres are started from their wheels unless NATS_URL / DATABASE_URL are set (NATS with
a service user for Mnemo, see ``mnemo_runtime.nats_users``); keys are made on first start (see
``keys``), and the gateway asks every request for one (unless MNEMO_AUTH=off); then Mnemo
is started detached, as four processes: ``api`` (gateway and ingest, which takes the gateway's
commands directly), ``projector`` (the entity and message tables), ``read`` (context with the
retrieval engine, and dialectic) and ``memory`` (the memory and passage projections, deriver,
summarizer, dreamer). The write path spreads over the cores, reads answer at normal priority,
and forming memories (deriving, embedding, dreaming) runs at idle CPU priority. Vectors live in
Postgres (pgvector), so the read process searches what the memory process writes; with the
embedded Qdrant shard instead (``MNEMO_MEMORY_VECTORS=edge``, one owner), the reads run inside
the memory process.
With MNEMO_COMPONENTS set, one process runs exactly those components (``mnemo serve``'s
all-in-one mode when it names them all). Every PID lives under ``$MNEMO_STATE_DIR/run``, every
log under ``$MNEMO_STATE_DIR/logs``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from mnemo_cli.keys import admin_key_path, local_keys, local_webhook_secret
from mnemo_cli.proc_cpu import memory_lines
from mnemo_runtime.memory.wiring import MemorySettings
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import (
    STACK_FILE,
    LocalNats,
    LocalPostgres,
    read_pid,
    record_stack,
    recorded_stack,
    redacted,
    stop_pid,
)


def _port(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


# Process name -> the environment that picks its components.
SPLIT: dict[str, dict[str, str]] = {
    "api": {"MNEMO_COMPONENTS": "gateway,ingest,grpc"},
    "projector": {
        "MNEMO_COMPONENTS": "projector",
        "MNEMO_PROJECTOR_MEMORY": "false",
        "MNEMO_PROJECTOR_PASSAGES": "false",
    },
    # Reads alone: each prepared statement is planned once (see ``mnemo_runtime.pg``).
    "read": {
        "MNEMO_COMPONENTS": "context,dialectic",
        "MNEMO_PG_PLAN_CACHE_MODE": "force_generic_plan",
    },
    "memory": {
        "MNEMO_COMPONENTS": "projector,deriver,summarizer,dreamer",
        "MNEMO_PROJECTOR_ENTITIES": "false",
    },
}
# With a vector index that only its owner may open, the reads join the process that writes it.
SINGLE_OWNER: dict[str, dict[str, str]] = {
    "api": SPLIT["api"],
    "projector": SPLIT["projector"],
    "memory": {
        "MNEMO_COMPONENTS": "projector,deriver,summarizer,dreamer,context,dialectic",
        "MNEMO_PROJECTOR_ENTITIES": "false",
    },
}


READS_SIGNAL_FILE = "reads.signal"

# Memory formation is background work. Under ``up`` the memory process runs at this CPU priority:
# ``idle`` (the default; Linux's SCHED_IDLE, elsewhere niceness 19), a niceness from 0 to 19, or
# ``normal``. SCHED_IDLE gives it only CPU time no other process wants and lets any other process
# that wakes take the core at once, so a burst of writes is acknowledged at full speed and the
# deriver catches up after it; the memory process's reads (context, dialectic) wait too then.
MEMORY_PRIORITY = "MNEMO_MEMORY_PRIORITY"


def background_priority(value: str) -> Callable[[], None] | None:
    """What a child process runs before exec to take priority ``value``; None for ``normal``."""
    value = value.strip().lower()
    if value == "normal":
        return None
    if value == "idle" and hasattr(os, "SCHED_IDLE"):
        return lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    niceness = _niceness(value)

    def renice() -> None:
        os.nice(niceness)

    return renice


def _niceness(value: str) -> int:
    value = "19" if value == "idle" else value
    if not value.isdigit() or not 0 <= int(value) <= 19:
        raise SystemExit(
            f"{MEMORY_PRIORITY} must be 'idle', 'normal' or a niceness from 0 to 19, not {value!r}"
        )
    return int(value)


def group_environment(value: str) -> dict[str, str]:
    """The environment that has a child started at priority ``value`` give its scheduling
    group the same priority once it has started (``mnemo_runtime.process.group_niceness``):
    each process ``up`` starts leads a session, whose group the kernel weighs before the
    process's own policy or niceness."""
    value = value.strip().lower()
    if value == "normal":
        return {}
    return {"MNEMO_GROUP_NICENESS": str(_niceness(value))}


def _priority(name: str) -> Callable[[], None] | None:
    if name != "memory":
        return None
    return background_priority(os.environ.get(MEMORY_PRIORITY, "idle"))


def _group(name: str, local_postgres: bool) -> dict[str, str]:
    """The memory process's group priority; and its Postgres backends' too (SCHED_IDLE as well,
    at ``idle``), when Postgres is the one ``up`` started (a server elsewhere is not ours to
    renice). At a background priority it yields to the reads answered on the host, too
    (``mnemo_runtime.reads_signal``)."""
    if name != "memory":
        return {}
    priority = os.environ.get(MEMORY_PRIORITY, "idle")
    env = group_environment(priority)
    if local_postgres and "MNEMO_GROUP_NICENESS" in env:
        env["MNEMO_PG_BACKEND_NICENESS"] = env["MNEMO_GROUP_NICENESS"]
        if priority.strip().lower() == "idle":
            env["MNEMO_PG_BACKEND_IDLE"] = "true"
    if "MNEMO_GROUP_NICENESS" in env:
        env["MNEMO_YIELD_TO_READS"] = os.environ.get("MNEMO_YIELD_TO_READS", "true")
    return env


def _layout(memory: bool) -> dict[str, dict[str, str]]:
    if os.environ.get("MNEMO_COMPONENTS"):
        return {"mnemo": {}}
    layout = SPLIT if MemorySettings().shared else SINGLE_OWNER
    return layout if memory else {k: v for k, v in layout.items() if k != "memory"}


def _paths(state: Path) -> tuple[LocalNats, LocalPostgres, Path]:
    state = state.resolve()
    nats = LocalNats(state / "nats", _port("MNEMO_NATS_PORT", 4222))
    pg = LocalPostgres(state / "postgres", _port("MNEMO_PG_PORT", 54329))
    return nats, pg, state / "run"


def pidfiles(run: Path) -> dict[str, Path]:
    """Every Mnemo process ``up`` may have started, whichever layout it used (that of an
    earlier version included)."""
    named = {name: run / f"{name}.pid" for name in ("mnemo", *SPLIT)}
    return named | {p.stem: p for p in sorted(run.glob("*.pid"))}


def running(settings: InfraSettings) -> bool:
    """Whether any Mnemo process of this state folder is alive."""
    _, _, run = _paths(settings.state_dir)
    return any(read_pid(p) is not None for p in pidfiles(run).values())


def gateway_url() -> str:
    """Where the local gateway listens."""
    return f"http://127.0.0.1:{_port('MNEMO_GATEWAY_PORT', 8000)}"


def grpc_address() -> str:
    """Where the local gRPC gateway listens."""
    return f"127.0.0.1:{_port('MNEMO_GRPC_PORT', 50051)}"


def up(settings: InfraSettings, timeout: float = 90.0, memory: bool = True) -> str:
    """Start what is missing; return the gateway URL once it reports ready.

    ``memory=False`` leaves the memory process out: the write path alone.
    """
    layout = _layout(memory)
    priorities = {name: _priority(name) for name in layout}  # a bad setting stops us here
    nats, pg, run = _paths(settings.state_dir)
    env = dict(os.environ)
    env["NATS_URL"] = settings.nats() or nats.start()
    env["DATABASE_URL"] = settings.database_url or pg.start()
    print(f"NATS      {redacted(env['NATS_URL'])}")
    print(f"Postgres  {redacted(env['DATABASE_URL'])}")
    keys = local_keys(settings)
    print(f"Webhooks  signed with the secret in {local_webhook_secret(settings)}")
    if keys is not None:
        env.setdefault("MNEMO_AUTH_KEYS_DIR", str(keys))
        if admin_key_path(settings).exists():
            print(f"Admin key {admin_key_path(settings)}  (`mnemo key` prints it)")
    url = gateway_url()
    # Where the process answering queries marks them for the memory process to yield to.
    env.setdefault("MNEMO_READS_SIGNAL", str(run.resolve() / READS_SIGNAL_FILE))
    env.setdefault("MNEMO_GATEWAY_PORT", str(_port("MNEMO_GATEWAY_PORT", 8000)))
    # Tools started later (``mnemo bench``) find the stack here without being told.
    record_stack(
        run, {"nats_url": env["NATS_URL"], "database_url": env["DATABASE_URL"], "gateway_url": url}
    )
    logs = settings.state_dir.resolve() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    starting: dict[Path, tuple[Path, int]] = {}
    metrics = metrics_ports(layout, os.environ.get("MNEMO_METRICS_PORT"))
    for name, extra in layout.items():
        pidfile = run / f"{name}.pid"
        if read_pid(pidfile) is not None:
            continue
        log = logs / f"{name}.log"
        starting[pidfile] = (log, log.stat().st_size if log.exists() else 0)
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mnemo_cli", "serve"],
                env={
                    **env,
                    **extra,
                    **metrics.get(name, {}),
                    **_group(name, settings.database_url is None),
                },
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                preexec_fn=priorities[name],
            )
        pidfile.write_text(str(proc.pid))
        print(f"Mnemo     {name}: pid {proc.pid}, log {log}")
        if name in metrics:
            print(
                f"          metrics http://127.0.0.1:{metrics[name]['MNEMO_METRICS_PORT']}/metrics"
            )
    _wait_ready(url, timeout, [run / f"{name}.pid" for name in layout], starting)
    print(f"Gateway   {url}  (ready; OpenAPI at {url}/openapi.json)")
    return url


def metrics_ports(layout: dict[str, dict[str, str]], base: str | None) -> dict[str, dict[str, str]]:
    """Each process's operations port: ``MNEMO_METRICS_PORT``, then the next ones, in layout
    order (the processes share this host's ports); nothing when it is unset."""
    if not base:
        return {}
    return {name: {"MNEMO_METRICS_PORT": str(int(base) + i)} for i, name in enumerate(layout)}


def _started(log: Path, offset: int) -> bool:
    """Whether the process writing ``log`` announced, after ``offset``, that it serves."""
    with log.open("rb") as f:
        f.seek(offset)
        return b'"mnemo.started"' in f.read()


# Problems of /ready that leave the stack up and serving: memory formation's projections work
# through a backlog (or retry) in the background, and quarantined events wait for an operator;
# neither is cured by waiting for a start-up, nor by a restart.
_BACKGROUND = ("projection memory", "projection passages")


def settled(status: int, body: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether a /ready answer (``status``, its body when 503) says the stack is up, and what to
    warn of: up when ready, or when only memory formation's projections or quarantined events
    are named."""
    if status == 200:
        return True, []
    problems: dict[str, str] = body.get("problems", {}) if status == 503 else {}
    if not problems or not all(k in _BACKGROUND or k.startswith("quarantined ") for k in problems):
        return False, []
    lag = body.get("lag", {})
    warnings = []
    for key, text in problems.items():
        name = key.removeprefix("projection ")
        behind = f" ({lag[name]} events to apply)" if key in _BACKGROUND and name in lag else ""
        warnings.append(f"{key}: {text}{behind}")
    return True, warnings


def _wait_ready(
    url: str, timeout: float, pidfiles_: list[Path], starting: dict[Path, tuple[Path, int]]
) -> None:
    """Until /ready answers 200 and every process just started has started all it runs."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        for pidfile in pidfiles_:
            if read_pid(pidfile) is None:
                raise SystemExit(
                    f"mnemo {pidfile.stem} exited during start-up; see its log."
                    f" Last readiness: {last}"
                )
        waiting = [p.stem for p, (log, at) in starting.items() if not _started(log, at)]
        if waiting:
            last = f"starting: {', '.join(waiting)}"
            time.sleep(0.2)
            continue
        try:
            r = httpx.get(f"{url}/ready", timeout=2)
            up, warnings = settled(r.status_code, r.json() if r.status_code == 503 else {})
            if up:
                for warning in warnings:
                    print(f"Warning   {warning}")
                return
            last = r.text
        except httpx.HTTPError as err:
            last = repr(err)
        time.sleep(0.2)
    raise SystemExit(f"mnemo not ready after {timeout:.0f}s: {last}")


def down(settings: InfraSettings) -> None:
    """Stop the Mnemo processes, then the local NATS and Postgres."""
    nats, pg, run = _paths(settings.state_dir)
    for name, pidfile in pidfiles(run).items():
        if stop_pid(pidfile):
            print(f"{name:9} stopped")
    (run / STACK_FILE).unlink(missing_ok=True)
    for name, stopped in (("nats", nats.stop()), ("postgres", pg.stop())):
        print(f"{name:9} {'stopped' if stopped else 'not running'}")


def stop(settings: InfraSettings, name: str) -> bool:
    """Stop one Mnemo process of ``up``'s layout (``memory``, say); True if it was running."""
    _, _, run = _paths(settings.state_dir)
    return stop_pid(run / f"{name}.pid")


def processes(settings: InfraSettings) -> dict[str, int | None]:
    """Each process of the local stack and its PID (None: not running): Mnemo's, ``nats``,
    ``postgres`` (the server's first process; its backends are its children)."""
    nats, pg, run = _paths(settings.state_dir)
    mnemo: dict[str, int | None] = {
        name: pid for name, f in pidfiles(run).items() if (pid := read_pid(f))
    }
    return {
        **(mnemo or {"mnemo": None}),
        "nats": read_pid(nats.pidfile),
        "postgres": read_pid(pg.pidfile),
    }


def status(settings: InfraSettings) -> None:
    """Print what runs; with Mnemo running, whether it is ready and how far each projection is
    behind the log (the gateway's ``/ready``)."""
    procs = processes(settings)
    for name, pid in procs.items():
        print(f"{name:9} {'pid ' + str(pid) if pid else 'not running'}")
    if not any(pid for name, pid in procs.items() if name not in ("nats", "postgres")):
        return
    url = recorded_stack(settings.state_dir).get("gateway_url") or gateway_url()
    try:
        r = httpx.get(f"{url}/ready", timeout=5)
        body = r.json()
    except (httpx.HTTPError, ValueError) as err:
        print(f"ready     no answer from {url}: {err!r}")
        return
    body = body if isinstance(body, dict) else {}
    for line in readiness(r.status_code, body):
        print(line)
    memory = procs.get("memory")
    if memory and any(
        n and k in ("memory", "passages") for k, n in (body.get("lag") or {}).items()
    ):
        for line in memory_lines(memory):
            print(line)


def readiness(status: int, body: dict[str, Any]) -> list[str]:
    """A /ready answer for a person: ready or not, each problem and warning it names, and the
    events each projection has yet to apply."""
    lines = ["ready     yes" if status == 200 else f"ready     no (HTTP {status})"]
    lines += [f"problem   {k}: {v}" for k, v in (body.get("problems") or {}).items()]
    lines += [f"warning   {k}: {v}" for k, v in (body.get("warnings") or {}).items()]
    lag = body.get("lag") or {}
    if lag:
        behind = ", ".join(f"{name} {int(n):,}" for name, n in lag.items())
        head = body.get("log_head")
        at = f" (log head {int(head):,})" if isinstance(head, int) else ""
        lines.append(f"behind    events each projection has yet to apply{at}: {behind}")
    return lines
