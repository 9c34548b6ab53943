"""Run Mnemo's services in one process (all-in-one) or a chosen subset (one per Deployment).

The same handler code runs in both modes; the component list only decides what this process
includes.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence

import uvicorn
from faststream.nats import NatsBroker

from mnemo_cli.migrations import migrate_all
from mnemo_context.app import build_service as build_context
from mnemo_context.app import run as run_context
from mnemo_deriver.app import run as run_deriver
from mnemo_deriver.settings import DeriverSettings
from mnemo_dialectic.app import run as run_dialectic
from mnemo_dreamer.app import run as run_dreamer
from mnemo_gateway.app import build_app as build_gateway
from mnemo_gateway.app import server as gateway_server
from mnemo_gateway.commands import LocalIngest
from mnemo_gateway.grpc_api.server import GrpcSettings, grpc_gateway
from mnemo_gateway.settings import GatewaySettings
from mnemo_gateway.webhooks.service import run_webhooks
from mnemo_ingest.app import build_app_with_local as build_ingest
from mnemo_ingest.app import build_broker as build_ingest_broker
from mnemo_ingest.settings import IngestSettings
from mnemo_projector.app import projection_groups
from mnemo_projector.partitioned import ProjectionGroup
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.infra import Infra, open_infra
from mnemo_runtime.logging import configure_logging, get_logger
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.ops import BusWatch, OpsServer, start_ops
from mnemo_runtime.partitions import Leases
from mnemo_runtime.precedence import precedence
from mnemo_runtime.priority import BackendPriority, group_niceness
from mnemo_runtime.process import settle_heap, until_stopped
from mnemo_runtime.reads_signal import ReadsSignal, open_reads_signal
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.tracing import configure_tracing
from mnemo_schema import subjects
from mnemo_schema.dreams import DREAM_SCHEDULER_DURABLE, DREAMER_DURABLE
from mnemo_summarizer.app import run as run_summarizer

ALL = (
    "projector",
    "ingest",
    "deriver",
    "summarizer",
    "dreamer",
    "context",
    "dialectic",
    "gateway",
    "grpc",
)
log = get_logger("mnemo.serve")


def stage_durables(component: str, partitions: int) -> dict[str, str]:
    """The durable consumers a stage reads (durable -> stage), for its metrics."""
    if component in (subjects.DERIVER, subjects.SUMMARIZER):
        return {subjects.stage_durable(component, p): component for p in range(partitions)}
    if component == "dreamer":
        return {DREAMER_DURABLE: "dreamer", DREAM_SCHEDULER_DURABLE: "dreamer-schedule"}
    return {}


async def serve(components: Sequence[str], infra_settings: InfraSettings) -> None:
    """Run ``components`` until SIGTERM / SIGINT."""
    unknown = set(components) - set(ALL)
    if unknown:
        raise SystemExit(f"unknown components: {', '.join(sorted(unknown))}")
    configure_logging(infra_settings.log_level, infra_settings.log_format)
    configure_tracing("mnemo")
    nats_url, db_url = infra_settings.require_urls()
    if infra_settings.migrate_on_start:
        await migrate_all(db_url)
    # Every stage shares this pool in the all-in-one process.
    backends = BackendPriority(
        infra_settings.pg_backend_niceness, idle=infra_settings.pg_backend_idle
    )
    infra = await open_infra(
        nats_url,
        db_url,
        "mnemo-" + "+".join(components),
        pool_size=24,
        partitions=infra_settings.partitions,
        on_connect=backends.joined,
        settings=infra_settings.pg_session(),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks: list[asyncio.Task[None]] = []
    broker: NatsBroker | None = None
    server: uvicorn.Server | None = None
    ps = ProjectorSettings()
    memory_settings = MemorySettings()
    # Only a process with a component that embeds or searches opens the memory adapters (an
    # embedded Qdrant shard, when chosen over pgvector, has a single owner).
    needs_memory = bool(
        "context" in components or ("projector" in components and (ps.memory or ps.passages))
    )
    memory = (
        await open_memory(memory_settings, infra_settings.state_dir.resolve(), infra.pool)
        if needs_memory
        else None
    )
    reads = _reads(components, infra_settings)
    ops: OpsServer | None = None
    durables = {d: s for c in components for d, s in stage_durables(c, infra.partitions).items()}
    # One holder of every partition lease this process takes (mnemo_runtime.partitions).
    leases = Leases(infra.database_url, infra.partitions)
    groups: list[ProjectionGroup] = []
    failed: asyncio.Task[None] | None = None
    try:
        if "projector" in components:
            groups = await projection_groups(
                ps, infra, memory, leases, memory_settings.near_duplicate_distance
            )
        if "deriver" in components:
            tasks.append(
                asyncio.create_task(
                    run_deriver(DeriverSettings(), infra, stop, leases), name="deriver"
                )
            )
        args = (infra.nc, infra.js, infra.pool, memory, stop)
        if "summarizer" in components:
            tasks.append(
                asyncio.create_task(run_summarizer(infra, stop, leases), name="summarizer")
            )
        # With the context service here, the dialectic and the dreamer call its handlers
        # directly; otherwise they ask it over NATS.
        context = await build_context(infra.pool, memory) if "context" in components else None
        if context is not None:
            tasks.append(asyncio.create_task(run_context(*args, service=context), name="context"))
        if "dreamer" in components:
            tasks.append(
                asyncio.create_task(
                    run_dreamer(*args, engine=context, partitions=infra.partitions), name="dreamer"
                )
            )
        if "dialectic" in components:
            tasks.append(
                asyncio.create_task(run_dialectic(*args, engine=context), name="dialectic")
            )
        local_ingest = None
        if "ingest" in components:
            broker = build_ingest_broker(nats_url)
            router, local_ingest = build_ingest(IngestSettings(), infra.js, infra.pool)
            broker.include_router(router)
            await broker.start()
        if "gateway" in components:
            gs = GatewaySettings()
            # With ingest in this process, the gateway hands it commands directly.
            app = build_gateway(gs, infra.nc, infra.pool, local_ingest)
            server = gateway_server(app, gs)
            tasks.append(asyncio.create_task(server.serve(), name="gateway"))
            # Beside the server, never in a request: queue.empty detection and delivery.
            tasks.append(
                asyncio.create_task(
                    run_webhooks(infra.nc, infra.pool, infra_settings.state_dir, stop),
                    name="webhooks",
                )
            )
        if "grpc" in components:
            tasks.append(
                asyncio.create_task(
                    _grpc(GrpcSettings(), GatewaySettings(), infra, local_ingest, stop), name="grpc"
                )
            )
        tasks.append(asyncio.create_task(leases.run(stop), name="leases"))
        watch = BusWatch(
            durables=durables,
            dead_letter_stages=(
                *sorted(set(durables.values()) - {"dreamer-schedule"}),
                *(g.group for g in groups),
                *(("webhooks",) if "gateway" in components else ()),
            ),
            projections={g.projection.name: g.pending for g in groups},
        )
        ops = await start_ops(infra.nc, infra.js, infra.pool, watch)
        settle_heap()
        # Started at the priority it was given; from here on, its group yields too, and so do
        # its Postgres backends (a background process whose group yields from the first instant
        # may take minutes to start on busy cores).
        group_niceness(infra_settings.group_niceness)
        backends.start()
        log.info("mnemo.started", components=list(components))
        failed = await until_stopped(stop, tasks)
    finally:
        log.info("mnemo.stopping")
        if server is not None:
            server.should_exit = True
        stop.set()
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        if ops is not None:
            await ops.close()
        if broker is not None:
            await broker.stop()
        if memory is not None:
            await memory.close()
        if reads is not None:
            reads.close()
        await infra.close()
    if failed is not None:
        # A component died: exit non-zero, for the supervisor to start the process again.
        raise SystemExit(f"mnemo: a component failed ({failed.get_name()}); see the log")


def _reads(components: Sequence[str], settings: InfraSettings) -> ReadsSignal | None:
    """The host's reads signal for this process: written where queries are answered, waited on
    by background steps where the process yields to reads (``mnemo up``: the memory process)."""
    answers = "context" in components or "dialectic" in components
    if settings.reads_signal is None or not (answers or settings.yield_to_reads):
        return None
    signal = open_reads_signal(settings.reads_signal, writer=answers)
    if signal is not None:
        precedence().share_reads(signal, max_wait_s=settings.reads_max_wait_s)
    return signal


async def _grpc(
    settings: GrpcSettings,
    gateway: GatewaySettings,
    infra: Infra,
    local_ingest: LocalIngest | None,
    stop: asyncio.Event,
) -> None:
    """The gRPC gateway until ``stop``; with ingest in this process, commands go to it directly."""
    async with grpc_gateway(settings, gateway, infra.nc, infra.pool, local_ingest):
        await stop.wait()
