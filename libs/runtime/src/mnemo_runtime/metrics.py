"""Prometheus metrics every Mnemo process exposes, and the few helpers that record them.

The metrics live in prometheus-client's process-wide default registry, as that library intends:
an instrumentation point anywhere in the process records into the one ``/metrics`` page (see
``mnemo_runtime.ops``). Names follow Prometheus conventions: base units (seconds), ``_total`` on
counters, a ``mnemo_`` prefix. Gauges about the bus (consumer lag, dead letters) are refreshed
when the page is scraped, never on a hot path.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# Request latencies from under a millisecond (a cached read) to a long dialectic answer.
_REQUEST_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
# Model calls: from a local heuristic (milliseconds) to a long remote completion.
_MODEL_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_EMBED_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

HTTP_REQUEST_SECONDS = Histogram(
    "mnemo_http_request_duration_seconds",
    "HTTP request latency at the gateway, by method, route template and status code.",
    ("method", "route", "status"),
    buckets=_REQUEST_BUCKETS,
)
CONSUMER_PENDING = Gauge(
    "mnemo_consumer_pending_messages",
    "Messages of a durable JetStream consumer not yet delivered to it (its lag).",
    ("durable",),
)
CONSUMER_ACK_PENDING = Gauge(
    "mnemo_consumer_ack_pending_messages",
    "Messages delivered to a durable consumer and not yet acknowledged (work in progress).",
    ("durable",),
)
STAGE_PENDING_WORK = Gauge(
    "mnemo_stage_pending_work_units",
    "Events a stage has not finished: not yet delivered plus delivered and unacknowledged.",
    ("stage",),
)
STAGE_LET_GO = Counter(
    "mnemo_stage_let_go_messages_total",
    "Messages a stage acknowledged unheld past their workspace's share of its hold, to read"
    " again from the log (not counted in its pending work units while they wait).",
    ("stage",),
)
STAGE_GAPS = Gauge(
    "mnemo_stage_gaps",
    "Workspaces with messages a stage let go past their share and has not finished yet.",
    ("stage",),
)
PROJECTION_PENDING = Gauge(
    "mnemo_projection_pending_events",
    "Events of a projection's filter in the log after its applied position.",
    ("projection",),
)
DEAD_LETTERS = Gauge(
    "mnemo_dead_letters",
    "Open dead letters (quarantined events, parked work) not yet redriven or discarded, by stage.",
    ("stage",),
)
DEAD_LETTERS_RECORDED = Counter(
    "mnemo_dead_letters_recorded_total",
    "Dead letters this process recorded (an event quarantined, work parked), by stage: alert on"
    " any increase.",
    ("stage",),
)
WEBHOOK_DELIVERIES = Counter(
    "mnemo_webhook_deliveries_total",
    "Webhook delivery attempts by outcome (delivered, retrying, failed, cancelled).",
    ("outcome",),
)
WEBHOOK_DELIVERY_SECONDS = Histogram(
    "mnemo_webhook_delivery_duration_seconds",
    "Latency of webhook POSTs that got an answer or failed on the network.",
    buckets=_REQUEST_BUCKETS,
)
MODEL_CALLS = Counter(
    "mnemo_model_calls_total",
    "Model calls by stage and outcome (ok, failed).",
    ("stage", "outcome"),
)
MODEL_TOKENS = Counter(
    "mnemo_model_tokens_total",
    "Model tokens by stage and direction (input, output).",
    ("stage", "direction"),
)
MODEL_RETRIES = Counter("mnemo_model_retries_total", "Model call retries by stage.", ("stage",))
MODEL_SECONDS = Histogram(
    "mnemo_model_call_duration_seconds",
    "Model call latency by stage, retries included.",
    ("stage",),
    buckets=_MODEL_BUCKETS,
)
EMBED_TEXTS = Counter(
    "mnemo_embedding_texts_total",
    "Texts embedded, by kind (store: observations written; query: search queries).",
    ("kind",),
)
EMBED_RECALLED = Counter(
    "mnemo_embedding_recalled_texts_total",
    "Texts to store whose vector was taken from one computed lately for the same text instead"
    " of embedding them again.",
)
EMBED_SECONDS = Histogram(
    "mnemo_embedding_duration_seconds",
    "Time of one embedding call, by kind.",
    ("kind",),
    buckets=_EMBED_BUCKETS,
)

# How late the event loop runs a callback it was asked to run on time: the wait every step of
# every coroutine of the process has, on top of its own work, when the loop is busy.
BACKGROUND_WAIT_SECONDS = Counter(
    "mnemo_background_wait_seconds_total",
    "Seconds a stage's background work (a backlog) waited for foreground work to finish.",
    ("stage",),
)
LOOP_LAG_SECONDS = Histogram(
    "mnemo_event_loop_lag_seconds",
    "How late the event loop ran a timer due now (sampled every 0.1 s).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)


def observe_model_call(
    stage: str,
    *,
    ok: bool,
    latency_ms: float,
    retries: int,
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> None:
    """Record one model call (the usage ledger calls this for every call it accounts)."""
    MODEL_CALLS.labels(stage, "ok" if ok else "failed").inc()
    MODEL_SECONDS.labels(stage).observe(latency_ms / 1000)
    if retries:
        MODEL_RETRIES.labels(stage).inc(retries)
    if input_tokens:
        MODEL_TOKENS.labels(stage, "input").inc(input_tokens)
    if output_tokens:
        MODEL_TOKENS.labels(stage, "output").inc(output_tokens)
