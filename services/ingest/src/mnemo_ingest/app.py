"""Composition root of ingest: the only place its adapters are built."""

from __future__ import annotations

from faststream.nats import NatsRouter
from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_ingest.adapters.jetstream import JetStreamLog
from mnemo_ingest.adapters.postgres import PgMessageDirectory
from mnemo_ingest.handlers import build_broker, build_router
from mnemo_ingest.service import IngestService
from mnemo_ingest.settings import IngestSettings
from mnemo_runtime.tokens import TokenCounter


def build_service(js: JetStreamContext, pool: AsyncConnectionPool) -> IngestService:
    """The ingest service over JetStream and Postgres."""
    return IngestService(JetStreamLog(js), PgMessageDirectory(pool), TokenCounter())


__all__ = ["build_app", "build_broker", "build_service"]


def build_app(
    settings: IngestSettings, js: JetStreamContext, pool: AsyncConnectionPool
) -> NatsRouter:
    """Ingest's router, ready to include in a broker."""
    del settings
    return build_router(build_service(js, pool))
