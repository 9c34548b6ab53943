"""Composition root of ingest: the only place its adapters are built."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from faststream.nats import NatsRouter
from nats.js import JetStreamContext

from mnemo_ingest.adapters.jetstream import JetStreamLog
from mnemo_ingest.adapters.postgres import PgMessageDirectory
from mnemo_ingest.handlers import build_broker, build_router, local_handler
from mnemo_ingest.service import IngestService
from mnemo_ingest.settings import IngestSettings
from mnemo_runtime.pg import Pool
from mnemo_runtime.tokens import TokenCounter
from mnemo_schema.commands import Command, CommandReply


def build_service(js: JetStreamContext, pool: Pool) -> IngestService:
    """The ingest service over JetStream and Postgres."""
    return IngestService(JetStreamLog(js), PgMessageDirectory(pool), TokenCounter())


__all__ = ["build_app", "build_app_with_local", "build_broker", "build_service", "local_handler"]


def build_app(settings: IngestSettings, js: JetStreamContext, pool: Pool) -> NatsRouter:
    """Ingest's router, ready to include in a broker."""
    router, _ = build_app_with_local(settings, js, pool)
    return router


def build_app_with_local(
    settings: IngestSettings, js: JetStreamContext, pool: Pool
) -> tuple[NatsRouter, Callable[[str, Command], Awaitable[CommandReply]]]:
    """Ingest's router and, over the same service, its handler for callers in this process."""
    del settings
    service = build_service(js, pool)
    return build_router(service), local_handler(service)
