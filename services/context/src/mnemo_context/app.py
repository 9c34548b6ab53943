"""Composition root of the context service: the Postgres reads, the optional memory adapters."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_context.adapters.postgres import PostgresReads
from mnemo_context.handlers import ContextService
from mnemo_runtime import rpc
from mnemo_runtime.logging import get_logger
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.migrate import package_migrations
from mnemo_schema import subjects
from mnemo_schema.context_queries import (
    ContextQuery,
    ObservationSearchQuery,
    RepresentationQuery,
    SearchQuery,
)

QUEUE_GROUP = "context"
log = get_logger("mnemo.context")


MIGRATIONS = package_migrations("mnemo_context")


async def build_service(pool: AsyncConnectionPool, memory: MemoryAdapters | None) -> ContextService:
    """The handlers over Postgres (the indexes they rely on come from the migrations)."""
    return ContextService(PostgresReads(pool), memory)


async def serve(nc: NATS, service: ContextService) -> list[Subscription]:
    """Answer each query kind on its own subject, replicas sharing one queue group."""
    return [
        await rpc.serve(
            nc, subjects.query_filter(ContextQuery.KIND), ContextQuery, service.context,
            QUEUE_GROUP,
        ),
        await rpc.serve(
            nc, subjects.query_filter(RepresentationQuery.KIND), RepresentationQuery,
            service.representation, QUEUE_GROUP,
        ),
        await rpc.serve(
            nc, subjects.query_filter(SearchQuery.KIND), SearchQuery, service.search, QUEUE_GROUP
        ),
        await rpc.serve(
            nc, subjects.query_filter(ObservationSearchQuery.KIND), ObservationSearchQuery,
            service.observation_search, QUEUE_GROUP,
        ),
    ]  # fmt: skip


async def run(
    nc: NATS,
    js: JetStreamContext,  # noqa: ARG001 - the all-in-one process passes every runner the same
    pool: AsyncConnectionPool,
    memory: MemoryAdapters | None,
    stop: asyncio.Event,
) -> None:
    """Run the context until ``stop``."""
    service = await build_service(pool, memory)
    subs = await serve(nc, service)
    log.info("context.serving", semantic=memory is not None)
    try:
        await stop.wait()
    finally:
        for sub in subs:
            await sub.unsubscribe()
