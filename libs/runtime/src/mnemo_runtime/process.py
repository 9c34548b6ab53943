"""The life of one service process: settings, logging, tracing, infrastructure, signals."""

from __future__ import annotations

import os

# One BLAS thread per process: the embedder parallelises by worker instead, and BLAS's own
# threads contend with the event loop and with each other when several stages share the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
import gc
import signal
from asyncio import FIRST_COMPLETED
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from mnemo_runtime.infra import Infra, open_infra
from mnemo_runtime.logging import configure_logging, get_logger
from mnemo_runtime.memory.wiring import MemoryAdapters, MemorySettings, open_memory
from mnemo_runtime.ops import BusWatch, start_ops
from mnemo_runtime.pg import Pool
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.tracing import configure_tracing

Body = Callable[[Infra, asyncio.Event], Awaitable[None]]
log = get_logger("mnemo.process")


def settle_heap() -> None:
    """Once start-up has loaded what the process keeps: take it out of the collector's sight.

    Modules, models and caches loaded at start-up live as long as the process; left tracked,
    every full collection walks all of them again, a pause of tens of milliseconds that lands
    in the middle of some request.
    """
    gc.collect()
    gc.freeze()


async def until_stopped(
    stop: asyncio.Event, tasks: Sequence[asyncio.Task[None]]
) -> asyncio.Task[None] | None:
    """Wait for ``stop``; should one of ``tasks`` fail first, set ``stop`` and return that task.

    A component that has died inside a process that lives on does no more work and tells no
    one: its durable's work piles up while the process looks alive. So the process stops instead
    (its caller exits non-zero), and a supervisor (``mnemo up``, Kubernetes) sees it go and starts
    it again. A component that returns without failing (one with nothing to do) is let be.
    """
    waiting: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    pending: set[asyncio.Future[Any]] = set(tasks)
    try:
        while not stop.is_set():
            done, pending = await asyncio.wait({waiting, *pending}, return_when=FIRST_COMPLETED)
            pending.discard(waiting)
            for task in tasks:
                if task in done and not task.cancelled() and task.exception() is not None:
                    log.error(
                        "process.component_failed", task=task.get_name(), exc_info=task.exception()
                    )
                    stop.set()
                    return task
        return None
    finally:
        waiting.cancel()


async def run_service(name: str, body: Body) -> None:
    """Open NATS and Postgres, run ``body`` until SIGTERM / SIGINT, then close everything."""
    settings = InfraSettings()
    configure_logging(settings.log_level, settings.log_format)
    configure_tracing(f"mnemo-{name}")
    log = get_logger(f"mnemo.{name}")
    nats_url, db_url = settings.require_urls()
    infra = await open_infra(nats_url, db_url, f"mnemo-{name}", partitions=settings.partitions)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ops = await start_ops(infra.nc, infra.js, infra.pool, BusWatch())
    log.info("service.started", service=name)
    settle_heap()
    try:
        await body(infra, stop)
    finally:
        log.info("service.stopping", service=name)
        if ops is not None:
            await ops.close()
        await infra.close()


def main(name: str, body: Body) -> None:
    """Entry point of ``python -m mnemo_<name>``."""
    import uvloop

    uvloop.run(run_service(name, body))


StageRun = Callable[
    [NATS, JetStreamContext, Pool, MemoryAdapters | None, asyncio.Event],
    Awaitable[None],
]


def main_stage(name: str, run: StageRun, *, memory_adapters: bool = True) -> None:
    """Entry point of a stage that reads memory: ``run(nc, js, pool, memory, stop)``.

    The memory adapters are opened when the vector index can be shared (pgvector, the default,
    or a Qdrant server): an embedded Qdrant shard belongs to the process that writes it, so a
    stage running alone then gets None. ``memory_adapters=False``: the stage needs none.
    """

    async def body(infra: Infra, stop: asyncio.Event) -> None:
        settings = MemorySettings()
        memory = None
        if memory_adapters and settings.shared:
            memory = await open_memory(settings, InfraSettings().state_dir.resolve(), infra.pool)
        try:
            await run(infra.nc, infra.js, infra.pool, memory, stop)
        finally:
            if memory is not None:
                await memory.close()

    main(name, body)
