"""OpenTelemetry set-up and W3C trace-context carriage in NATS headers and event envelopes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.util.types import Attributes


class RecordWhenExported(Sampler):
    """Spans are recorded only once the process exports them (``exporting``).

    Either way each span gets its ids, which travel in NATS headers and event envelopes and
    appear in the logs. Recording spans that no exporter reads took about an eighth of the
    gateway's CPU per request.
    """

    def __init__(self, exporting: bool = False) -> None:
        self.exporting = exporting

    def should_sample(
        self,
        parent_context: context.Context | None,
        trace_id: int,  # noqa: ARG002 - the Sampler interface
        name: str,  # noqa: ARG002
        kind: trace.SpanKind | None = None,  # noqa: ARG002
        attributes: Attributes = None,
        links: Sequence[trace.Link] | None = None,  # noqa: ARG002
        trace_state: trace.TraceState | None = None,  # noqa: ARG002
    ) -> SamplingResult:
        state = trace.get_current_span(parent_context).get_span_context().trace_state
        if self.exporting:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, state)
        return SamplingResult(Decision.DROP, None, state)

    def get_description(self) -> str:
        return "RecordWhenExported"


_sampler: RecordWhenExported | None = None


def configure_tracing(service: str, processors: list[SpanProcessor] | None = None) -> None:
    """Install a tracer provider once per process; extra span processors (exporters) optional.

    Spans are recorded from the first call that passes a processor on.
    """
    global _sampler
    if _sampler is not None:
        provider = trace.get_tracer_provider()
        if isinstance(provider, TracerProvider):
            for p in processors or []:
                provider.add_span_processor(p)
        _sampler.exporting = _sampler.exporting or bool(processors)
        return
    _sampler = RecordWhenExported(exporting=bool(processors))
    provider = TracerProvider(resource=Resource.create({"service.name": service}), sampler=_sampler)
    for p in processors or []:
        provider.add_span_processor(p)
    trace.set_tracer_provider(provider)


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
