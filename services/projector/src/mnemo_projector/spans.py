"""Tracing of applied batches: one span per originating request, on that request's trace."""

from __future__ import annotations

from itertools import groupby

from opentelemetry.trace import Span

from mnemo_runtime.tracing import extract_context, tracer
from mnemo_schema.events import Event

_tracer = tracer("mnemo.projector")


class SpanGroup:
    """One span per originating request in a batch, parented on that request's trace context."""

    def __init__(self, batch: list[tuple[int, Event]], projection: str) -> None:
        self._batch = batch
        self._name = projection
        self._spans: list[Span] = []

    def __enter__(self) -> None:
        for trace, group in groupby(self._batch, key=lambda se: se[1].trace.get("traceparent")):
            if trace is None:
                continue
            items = list(group)
            span = _tracer.start_span(
                "projector.apply",
                context=extract_context(items[0][1].trace),
                attributes={
                    "events": len(items),
                    "first_seq": items[0][0],
                    "projection": self._name,
                },
            )
            self._spans.append(span)

    def __exit__(self, *exc: object) -> None:
        for span in self._spans:
            span.end()
