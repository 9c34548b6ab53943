"""Composition root of the context service: the Postgres reads, the optional memory adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from pydantic import BaseModel

from mnemo_context.adapters.evidence import PostgresEvidence
from mnemo_context.adapters.postgres import PostgresReads
from mnemo_context.adapters.rerank import HttpReranker
from mnemo_context.engine import EngineConfig, RetrievalEngine
from mnemo_context.handlers import ContextService
from mnemo_context.settings import ContextSettings
from mnemo_runtime import rpc
from mnemo_runtime.logging import get_logger
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.pg import Pool
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema import subjects
from mnemo_schema.context_queries import (
    ContextQuery,
    ObservationSearchQuery,
    RepresentationQuery,
    SearchQuery,
)
from mnemo_schema.retrieval import MessagesQuery, RetrievalQuery, StoredQuery

QUEUE_GROUP = "context"
log = get_logger("mnemo.context")


MIGRATIONS = package_migrations("mnemo_context")


def build_engine(
    pool: Pool,
    memory: MemoryAdapters | None,
    settings: ContextSettings | None = None,
) -> RetrievalEngine:
    """The retrieval engine over Postgres and, when given, the embedder and vector index; with
    a reranking server configured, reranked by it."""
    settings = settings or ContextSettings()
    reranker = (
        HttpReranker(
            settings.rerank_url,
            api_key=settings.rerank_api_key,
            timeout_s=settings.rerank_timeout_s,
        )
        if settings.rerank_url
        else None
    )
    config = EngineConfig(query_cache=settings.query_cache, query_cache_s=settings.query_cache_s)
    # Observation vectors in this database are searched in the reads' own statements.
    index = memory.index if memory is not None else None
    vectors = index if isinstance(index, PgVectorIndex) and index.in_database_of(pool) else None
    return RetrievalEngine(
        PostgresEvidence(pool, vectors), memory, reranker=reranker, config=config
    )


async def build_service(
    pool: Pool,
    memory: MemoryAdapters | None,
    engine: RetrievalEngine | None = None,
) -> ContextService:
    """The handlers over Postgres (the indexes they rely on come from the migrations)."""
    return ContextService(PostgresReads(pool), engine or build_engine(pool, memory))


async def serve(nc: NATS, service: ContextService) -> list[rpc.Served]:
    """Answer each query kind on its own subject, replicas sharing one queue group."""
    answered: list[tuple[type[Any], Callable[[str, Any], Awaitable[BaseModel]]]] = [
        (ContextQuery, service.context),
        (RepresentationQuery, service.representation),
        (SearchQuery, service.search),
        (ObservationSearchQuery, service.observation_search),
        (RetrievalQuery, service.retrieve),
        (StoredQuery, service.stored),
        (MessagesQuery, service.stored_messages),
    ]
    return [
        await rpc.serve(nc, subjects.query_filter(kind.KIND), kind, handler, QUEUE_GROUP)
        for kind, handler in answered
    ]


async def run(
    nc: NATS,
    js: JetStreamContext,  # noqa: ARG001 - the all-in-one process passes every runner the same
    pool: Pool,
    memory: MemoryAdapters | None,
    stop: asyncio.Event,
    service: ContextService | None = None,
) -> None:
    """Run the context until ``stop`` (``service``: one built already, to share in-process)."""
    service = service or await build_service(pool, memory)
    subs = await serve(nc, service)
    log.info("context.serving", semantic=memory is not None)
    try:
        await stop.wait()
    finally:
        # The queries being answered finish first (each subscription's grace at most).
        await asyncio.gather(*(sub.unsubscribe() for sub in subs))
