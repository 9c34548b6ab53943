"""Composition root of the gateway: builds the FastAPI app over a NATS connection and a pool."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse
from nats.aio.client import Client as NATS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemo_gateway import errors
from mnemo_gateway.auth.authority import Authority
from mnemo_gateway.auth.gate import authorise_request, refused, secured
from mnemo_gateway.auth.settings import AuthSettings
from mnemo_gateway.commands import CommandBus, LocalIngest
from mnemo_gateway.deps import Services, reject_unknown_query
from mnemo_gateway.hot import HotPath
from mnemo_gateway.marks import HEADER, QuarantineMarks
from mnemo_gateway.routes import (
    cards,
    conclusions,
    context,
    dialectic,
    dreams,
    health,
    keys,
    messages,
    peers,
    queue,
    scopes,
    sessions,
    summaries,
    uploads,
    webhooks,
    workspaces,
)
from mnemo_gateway.settings import GatewaySettings
from mnemo_gateway.store import ReadStore
from mnemo_gateway.watermark import ProjectionWatermark
from mnemo_runtime.metrics import HTTP_REQUEST_SECONDS
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects


def build_services(
    settings: GatewaySettings,
    nc: NATS,
    pool: Pool,
    local_ingest: LocalIngest | None = None,
    auth: AuthSettings | None = None,
) -> tuple[Services, Callable[[], AbstractAsyncContextManager[None]]]:
    """What the handlers of every transport work with, and the context that keeps it current
    (the projections' watermarks, the key revocations).

    ``auth``: the authentication settings (by default from the environment: on, and refusing to
    start without a key to verify with).
    """
    authority = Authority.build(auth or AuthSettings(), nc.jetstream())
    watermark = ProjectionWatermark(nc, pool)
    memory_watermark = ProjectionWatermark(
        nc, pool, projection="memory", subject=subjects.MEMORY_PROJECTION_APPLIED, fair=True
    )

    @asynccontextmanager
    async def lifecycle() -> AsyncIterator[None]:
        await authority.start()
        await watermark.start()
        await memory_watermark.start()
        try:
            yield
        finally:
            await watermark.stop()
            await memory_watermark.stop()
            await authority.stop()

    services = Services(
        bus=CommandBus(
            nc,
            watermark,
            memory_watermark,
            timeout=settings.command_timeout_s,
            read_your_writes_timeout=settings.read_your_writes_timeout_s,
            local=local_ingest,
        ),
        store=ReadStore(pool),
        nc=nc,
        authority=authority,
    )
    return services, lifecycle


class _App(FastAPI):
    """FastAPI, whose OpenAPI document says which operations take a bearer key."""

    def openapi(self) -> dict[str, Any]:
        return secured(super().openapi())


def build_app(
    settings: GatewaySettings,
    nc: NATS,
    pool: Pool,
    local_ingest: LocalIngest | None = None,
    auth: AuthSettings | None = None,
) -> Edge:
    """The HTTP app; NATS and Postgres are opened (and closed) by the caller.

    ``local_ingest`` is ingest in this process, if it runs here: commands go to it directly.
    ``auth``: the authentication settings (by default from the environment: on, and refusing to
    start without a key to verify with).

    The gateway holds no vector index: what needs one is asked of the context service.
    """
    services, lifecycle = build_services(settings, nc, pool, local_ingest, auth)
    authority = services.authority
    marks = QuarantineMarks(nc, pool)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with lifecycle():
            await marks.start()
            yield
            await marks.stop()

    app = _App(
        title="Mnemo",
        version="0.1.0",
        description="Memory for AI agents. Speaks the Honcho v3 API.",
        lifespan=lifespan,
        # Every route is authorised for its template and ids (see auth.policy).
        dependencies=[Depends(authorise_request), Depends(reject_unknown_query)],
    )
    app.state.nc = nc
    app.state.js = nc.jetstream()
    app.state.watermark = services.bus.watermark
    app.state.settings = settings
    app.state.pool = pool
    app.state.authority = authority
    app.state.services = services
    errors.install(app)
    for r in (
        health,
        keys,
        workspaces,
        peers,
        sessions,
        messages,
        uploads,
        conclusions,
        queue,
        cards,
        summaries,
        context,
        dialectic,
        dreams,
        scopes,
        webhooks,
    ):
        app.include_router(r.router)

    edge = Edge(app, HotPath(app, services), settings.max_body_bytes, marks, authority)
    return edge


def server(app: Edge, settings: GatewaySettings) -> uvicorn.Server:
    """The HTTP server for ``app``, on the caller's event loop (uvloop where it runs)."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop="none",
        http="httptools",
    )
    return uvicorn.Server(config)


# Label values stay bounded whatever clients send.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Edge:
    """Pure ASGI middleware refusing oversized bodies (413) and requests without a valid key
    (401, see ``auth.gate``) before they are read; the rest goes to ``inner`` (the direct path
    for posting messages, then FastAPI). It times every request into the latency histogram,
    labelled by the matched route's template.

    FastAPI itself opens the server span of each request (and continues an incoming traceparent).

    Written against ASGI directly because Starlette's BaseHTTPMiddleware costs a task and a
    memory stream per request on the hot path.
    """

    def __init__(
        self,
        app: FastAPI,
        inner: ASGIApp,
        max_body: int,
        marks: QuarantineMarks,
        authority: Authority,
    ) -> None:
        self.app = app
        self.inner = inner
        self.max_body = max_body
        self.marks = marks
        self.authority = authority
        # Expose the wrapped app's attributes (state, router, openapi) to callers and tests.
        self.state = app.state
        self.router = app.router

    def __getattr__(self, name: str) -> object:
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees if the app fails before it answers

        async def timed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # Only to a caller the key lets in: a refusal tells nothing of the workspace.
                marked = self.marks.header(scope["path"]) if status not in (401, 403) else None
                if marked is not None:
                    message = {**message, "headers": [*message["headers"], (HEADER, marked)]}
            await send(message)

        try:
            await self._serve(scope, receive, timed_send)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            method = scope["method"] if scope["method"] in _METHODS else "other"
            HTTP_REQUEST_SECONDS.labels(method, route, str(status)).observe(
                time.perf_counter() - started
            )

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = refused(self.authority, scope)
        if refusal is not None:
            await errors.refusal_response(refusal)(scope, receive, send)
            return
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > self.max_body:
                response = JSONResponse(
                    {"detail": f"body: larger than {self.max_body} bytes", "field": "body"},
                    status_code=413,
                )
                await response(scope, receive, send)
                return
        await self.inner(scope, receive, send)
