"""Spans are recorded only where they are exported; their ids travel either way."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mnemo_runtime.tracing import RecordWhenExported, extract_context, inject_headers


def test_without_an_exporter_spans_are_not_recorded_but_their_ids_travel() -> None:
    sampler = RecordWhenExported()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("request") as request:
        assert not request.is_recording()
        assert request.get_span_context().is_valid
        headers = inject_headers()
    assert headers["traceparent"].split("-")[1] == format(
        request.get_span_context().trace_id, "032x"
    )
    with tracer.start_as_current_span("handler", context=extract_context(headers)) as handler:
        assert handler.get_span_context().trace_id == request.get_span_context().trace_id
    assert exporter.get_finished_spans() == ()

    sampler.exporting = True
    with tracer.start_as_current_span("handler", context=extract_context(headers)) as handler:
        assert handler.is_recording()
    (span,) = exporter.get_finished_spans()
    assert span.context.trace_id == request.get_span_context().trace_id
    assert span.parent is not None and span.parent.span_id == request.get_span_context().span_id
    assert trace.get_current_span() is trace.INVALID_SPAN
