"""Composition root of the gateway: builds the FastAPI app over a NATS connection and a pool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from nats.aio.client import Client as NATS
from psycopg_pool import AsyncConnectionPool

from mnemo_gateway import errors
from mnemo_gateway.commands import CommandBus
from mnemo_gateway.deps import Services
from mnemo_gateway.routes import health, messages, peers, sessions, workspaces
from mnemo_gateway.settings import GatewaySettings
from mnemo_gateway.store import ReadStore
from mnemo_gateway.watermark import ProjectionWatermark
from mnemo_runtime.tracing import tracer

_tracer = tracer("mnemo.gateway")


def build_app(settings: GatewaySettings, nc: NATS, pool: AsyncConnectionPool) -> FastAPI:
    """The HTTP app; NATS and Postgres are opened (and closed) by the caller."""
    watermark = ProjectionWatermark(nc, pool)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await watermark.start()
        yield
        await watermark.stop()

    app = FastAPI(
        title="Mnemo",
        version="0.1.0",
        description="Memory for AI agents. Speaks the Honcho v3 API.",
        lifespan=lifespan,
    )
    app.state.nc = nc
    app.state.js = nc.jetstream()
    app.state.watermark = watermark
    app.state.ready_max_lag = settings.ready_max_lag
    app.state.services = Services(
        bus=CommandBus(
            nc,
            watermark,
            timeout=settings.command_timeout_s,
            read_your_writes_timeout=settings.read_your_writes_timeout_s,
        ),
        store=ReadStore(pool),
    )
    errors.install(app)
    for r in (health, workspaces, peers, sessions, messages):
        app.include_router(r.router)

    @app.middleware("http")
    async def edge(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > settings.max_body_bytes:
            return JSONResponse(
                {"detail": f"body: larger than {settings.max_body_bytes} bytes", "field": "body"},
                status_code=413,
            )
        with _tracer.start_as_current_span(
            f"{request.method} {request.url.path}",
            attributes={"http.method": request.method, "http.target": request.url.path},
        ) as span:
            response = await call_next(request)
            span.set_attribute("http.status_code", response.status_code)
            return response

    return app
