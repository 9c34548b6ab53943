"""One trace follows a write from the HTTP request through ingest to the projector, its context
carried in NATS headers: from the gateway to ingest when they are apart, and on the events."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mnemo_runtime.tracing import configure_tracing

from .conftest import admin_headers


@pytest.mark.parametrize("local", [False, True], ids=["ingest-over-nats", "ingest-in-process"])
async def test_one_trace_from_http_through_ingest_to_the_projector(
    own_nats, fresh_database, write_path, local
):
    exporter = InMemorySpanExporter()
    configure_tracing("mnemo-test", [SimpleSpanProcessor(exporter)])
    async with write_path(own_nats, fresh_database, "trace-test", local=local) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=admin_headers()
        ) as http:
            r = await http.post("/v3/workspaces", json={"id": "traced"})
            assert r.status_code == 201
            r = await http.post("/v3/workspaces/traced/sessions", json={"id": "s"})
            exporter.clear()
            r = await http.post(
                "/v3/workspaces/traced/sessions/s/messages",
                json={"messages": [{"peer_id": "p", "content": "hello"}]},
            )
            assert r.status_code == 201
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
