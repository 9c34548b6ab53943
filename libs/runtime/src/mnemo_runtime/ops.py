"""The operations port of a process: ``/metrics`` (Prometheus), ``/health`` and ``/ready``.

Every Mnemo process can serve it (``MNEMO_METRICS_PORT``; off when unset, so that several local
processes do not contend for one port). Kubernetes probes the background stages here, and
Prometheus scrapes every pod here.

It is a deliberately small HTTP/1.1 server on ``asyncio.start_server``: three GET routes, one
request per connection, bounded reads with a timeout. A second ASGI server in the process would
install its own signal handlers beside the gateway's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo_runtime import metrics
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects

log = get_logger("mnemo.ops")

_MAX_REQUEST = 8192
_READ_TIMEOUT_S = 5.0
# A scrape must not hang on a slow bus: gauges not refreshed in time keep their last value.
_REFRESH_TIMEOUT_S = 5.0


class OpsSettings(BaseSettings):
    """Env prefix MNEMO_METRICS_: where the operations port listens (unset port: no server)."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_METRICS_", extra="ignore")

    port: int | None = Field(default=None, ge=0, le=65535)
    # Loopback unless told otherwise: the chart sets 0.0.0.0 inside the pod's network namespace.
    host: str = "127.0.0.1"


@dataclass(frozen=True)
class BusWatch:
    """What a process reports about the bus: the consumers and dead letters of its stages.

    ``durables`` maps each durable consumer to the stage it feeds; ``projections`` maps each
    projection this process applies to a callable counting the events it has yet to apply.
    """

    durables: Mapping[str, str] = field(default_factory=dict)
    dead_letter_stages: tuple[str, ...] = ()
    projections: Mapping[str, Callable[[], Awaitable[int]]] = field(default_factory=dict)


async def refresh_bus_gauges(js: JetStreamContext, watch: BusWatch) -> None:
    """Read consumer, projection and dead-letter state from JetStream into the gauges."""
    for durable, stage in watch.durables.items():
        try:
            info = await js.consumer_info(subjects.STREAM, durable)
        except Exception:
            continue  # not created yet: nothing to report
        pending, acking = int(info.num_pending or 0), int(info.num_ack_pending or 0)
        metrics.CONSUMER_PENDING.labels(durable).set(pending)
        metrics.CONSUMER_ACK_PENDING.labels(durable).set(acking)
        metrics.STAGE_PENDING_WORK.labels(stage).set(pending + acking)
    for name, pending_events in watch.projections.items():
        with contextlib.suppress(Exception):
            metrics.PROJECTION_PENDING.labels(name).set(await pending_events())


async def refresh_dead_letter_gauge(pool: Pool, stages: tuple[str, ...]) -> None:
    """Open dead letters per stage, from the table every stage records them in."""
    if not stages:
        return
    async with pool.connection(timeout=2) as conn:
        rows = await (
            await conn.execute(
                "SELECT stage, count(*) AS n FROM dead_letters"
                " WHERE status IN ('open', 'redrive') AND stage = ANY(%s) GROUP BY stage",
                (list(stages),),
            )
        ).fetchall()
    counts = {r["stage"]: int(r["n"]) for r in rows}
    for stage in stages:
        metrics.DEAD_LETTERS.labels(stage).set(counts.get(stage, 0))


Check = Callable[[], Awaitable[str | None]]


def infra_checks(nc: NATS, js: JetStreamContext, pool: Pool) -> dict[str, Check]:
    """Readiness of a stage process: NATS connected, the event stream there, Postgres answering."""

    async def nats() -> str | None:
        if not nc.is_connected:
            return "not connected"
        try:
            await js.stream_info(subjects.STREAM)
        except Exception as err:
            return f"event stream unavailable: {err!r}"
        return None

    async def postgres() -> str | None:
        try:
            async with pool.connection(timeout=2) as conn:
                await conn.execute("SELECT 1")
        except Exception as err:
            return f"unreachable: {err!r}"
        return None

    return {"nats": nats, "postgres": postgres}


LAG_SAMPLE_S = 0.1


async def watch_loop_lag(every_s: float = LAG_SAMPLE_S) -> None:
    """Until cancelled, record in ``metrics.LOOP_LAG_SECONDS`` how late the loop wakes a due sleep."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + every_s
        await asyncio.sleep(every_s)
        metrics.LOOP_LAG_SECONDS.observe(max(0.0, loop.time() - due))


class OpsServer:
    """Serves /metrics, /health and /ready until closed."""

    def __init__(
        self,
        settings: OpsSettings,
        checks: Mapping[str, Check],
        refresh: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._settings = settings
        self._checks = checks
        self._refresh = refresh
        self._server: asyncio.Server | None = None
        self._lag: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The port listened on (the chosen one when configured as 0)."""
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Listen on the configured host and port."""
        self._server = await asyncio.start_server(
            self._handle, self._settings.host, self._settings.port
        )
        self._lag = asyncio.create_task(watch_loop_lag(), name="ops.loop_lag")
        log.info("ops.listening", host=self._settings.host, port=self.port)

    async def close(self) -> None:
        """Stop listening."""
        if self._lag is not None:
            self._lag.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._lag
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
            if len(head) > _MAX_REQUEST:
                raise ValueError("request too large")
            method, path, *_ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            status, ctype, body = await self._route(method, path.split("?", 1)[0])
        except (
            ValueError,
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            status, ctype, body = 400, "text/plain", b"bad request\n"
        head_out = (
            f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(head_out.encode("latin-1") + body)
            await writer.drain()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()

    async def _route(self, method: str, path: str) -> tuple[int, str, bytes]:
        if method != "GET":
            return 405, "text/plain", b"GET only\n"
        if path == "/health":
            return 200, "application/json", b'{"status":"ok"}'
        if path == "/ready":
            problems = {}
            for name, check in self._checks.items():
                if (problem := await check()) is not None:
                    problems[name] = problem
            body = {"status": "not ready" if problems else "ready", "problems": problems}
            return (503 if problems else 200), "application/json", json.dumps(body).encode()
        if path == "/metrics":
            if self._refresh is not None:
                try:
                    await asyncio.wait_for(self._refresh(), _REFRESH_TIMEOUT_S)
                except Exception:
                    log.warning("ops.refresh_failed", exc_info=True)
            return 200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
        return 404, "text/plain", b"not found\n"


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}


async def start_ops(
    nc: NATS,
    js: JetStreamContext,
    pool: Pool,
    watch: BusWatch,
    settings: OpsSettings | None = None,
) -> OpsServer | None:
    """The operations server of a process when ``MNEMO_METRICS_PORT`` is set, started; else None."""
    settings = settings or OpsSettings()
    if settings.port is None:
        return None

    async def refresh() -> None:
        await refresh_bus_gauges(js, watch)
        await refresh_dead_letter_gauge(pool, watch.dead_letter_stages)

    server = OpsServer(settings, infra_checks(nc, js, pool), refresh)
    await server.start()
    return server
