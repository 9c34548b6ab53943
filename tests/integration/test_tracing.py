"""One trace follows a write from the HTTP request through ingest to the projector."""

from __future__ import annotations

import asyncio

import httpx
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mnemo_gateway.app import build_app as build_gateway
from mnemo_gateway.settings import GatewaySettings
from mnemo_ingest.app import build_app as build_ingest
from mnemo_ingest.app import build_broker
from mnemo_ingest.settings import IngestSettings
from mnemo_projector.app import build_app as build_projector
from mnemo_projector.settings import ProjectorSettings
from mnemo_runtime.infra import open_infra
from mnemo_runtime.tracing import configure_tracing


async def test_trace_context_travels_in_nats_headers(own_nats, fresh_database):
    exporter = InMemorySpanExporter()
    configure_tracing("mnemo-test", [SimpleSpanProcessor(exporter)])
    infra = await open_infra(own_nats, fresh_database, "trace-test")
    projector = build_projector(ProjectorSettings(), infra.nc, infra.js, infra.pool)
    await projector.setup()
    stop = asyncio.Event()
    task = asyncio.create_task(projector.run(stop))
    broker = build_broker(own_nats)
    broker.include_router(build_ingest(IngestSettings(), infra.js, infra.pool))
    await broker.start()
    app = build_gateway(GatewaySettings(), infra.nc, infra.pool)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                r = await http.post("/v3/workspaces", json={"id": "traced"})
                assert r.status_code == 201
                r = await http.post("/v3/workspaces/traced/sessions", json={"id": "s"})
                exporter.clear()
                r = await http.post(
                    "/v3/workspaces/traced/sessions/s/messages",
                    json={"messages": [{"peer_id": "p", "content": "hello"}]},
                )
                assert r.status_code == 201
    finally:
        stop.set()
        await task
        await broker.stop()
        await infra.close()
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    http_span = by_name["POST /v3/workspaces/{workspace_id}/sessions/{session_id}/messages"]
    ingest_span = by_name["ingest.command"]
    projector_span = by_name["projector.apply"]
    trace_id = http_span.context.trace_id
    assert ingest_span.context.trace_id == trace_id
    assert projector_span.context.trace_id == trace_id
    assert ingest_span.parent is not None and projector_span.parent is not None
    assert projector_span.parent.span_id == ingest_span.context.span_id
