"""OpenTelemetry set-up and W3C trace-context carriage in NATS headers and event envelopes."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

_configured = False


def configure_tracing(service: str, processors: list[SpanProcessor] | None = None) -> None:
    """Install a tracer provider once per process; extra span processors (exporters) optional."""
    global _configured
    if _configured:
        provider = trace.get_tracer_provider()
        if isinstance(provider, TracerProvider):
            for p in processors or []:
                provider.add_span_processor(p)
        return
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    for p in processors or []:
        provider.add_span_processor(p)
    trace.set_tracer_provider(provider)
    _configured = True


def tracer(name: str) -> trace.Tracer:
    """A tracer for one component."""
    return trace.get_tracer(name)


def inject_headers() -> dict[str, str]:
    """The current trace context as a header dict (traceparent, tracestate)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def extract_context(headers: Mapping[str, str] | None) -> context.Context:
    """A context whose parent is the span described by ``headers``."""
    return propagate.extract(dict(headers or {}))
