"""Composition root of the projector."""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from psycopg_pool import AsyncConnectionPool

from mnemo_projector.runner import PgProjector
from mnemo_projector.settings import ProjectorSettings


def build_app(
    settings: ProjectorSettings, nc: NATS, js: JetStreamContext, pool: AsyncConnectionPool
) -> PgProjector:
    """The Postgres projector."""
    return PgProjector(nc, js, pool, batch_size=settings.batch_size)
