"""The operations port: /health, /ready, /metrics, and the metrics its helpers record."""

from __future__ import annotations

import asyncio
import time

import httpx
from prometheus_client import REGISTRY

from mnemo_runtime.embeddings import FakeEmbedder
from mnemo_runtime.embeddings.metered import MeteredEmbedder
from mnemo_runtime.models.ports import Stage, Usage
from mnemo_runtime.models.usage import UsageLedger
from mnemo_runtime.ops import OpsServer, OpsSettings, watch_loop_lag


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def _serve(checks, refresh=None) -> OpsServer:
    server = OpsServer(OpsSettings(port=0), checks, refresh)
    await server.start()
    return server


async def test_health_ready_and_metrics() -> None:
    broken = {"value": "down for the test"}
    refreshed = []

    async def nats() -> str | None:
        return None

    async def postgres() -> str | None:
        return broken["value"]

    async def refresh() -> None:
        refreshed.append(True)

    server = await _serve({"nats": nats, "postgres": postgres}, refresh)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
            assert (await client.get("/health")).json() == {"status": "ok"}
            r = await client.get("/ready")
            assert r.status_code == 503
            assert r.json()["problems"] == {"postgres": "down for the test"}
            broken["value"] = None
            assert (await client.get("/ready")).status_code == 200
            r = await client.get("/metrics")
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/plain")
            assert "# TYPE mnemo_http_request_duration_seconds histogram" in r.text
            assert refreshed, "a scrape refreshes the bus gauges first"
            assert (await client.get("/nope")).status_code == 404
            assert (await client.post("/metrics")).status_code == 405
    finally:
        await server.close()


async def test_a_malformed_request_gets_400_and_the_server_goes_on() -> None:
    server = await _serve({})
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GARBAGE\r\n\r\n")
        await writer.drain()
        assert (await reader.read()).startswith(b"HTTP/1.1 400 ")
        writer.close()
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://127.0.0.1:{server.port}/health")).status_code == 200
    finally:
        await server.close()


async def test_model_calls_are_counted_per_stage() -> None:
    before_in = _sample("mnemo_model_tokens_total", stage="summarizer", direction="input")
    before_failed = _sample("mnemo_model_calls_total", stage="summarizer", outcome="failed")
    before_n = _sample("mnemo_model_call_duration_seconds_count", stage="summarizer")
    ledger = UsageLedger()
    ledger.record(
        Stage.SUMMARIZER, Usage(input_tokens=120, output_tokens=30), latency_ms=40, retries=1
    )
    ledger.record_failure(Stage.SUMMARIZER, latency_ms=5, retries=2)
    assert _sample("mnemo_model_tokens_total", stage="summarizer", direction="input") == (
        before_in + 120
    )
    assert _sample("mnemo_model_calls_total", stage="summarizer", outcome="failed") == (
        before_failed + 1
    )
    assert _sample("mnemo_model_call_duration_seconds_count", stage="summarizer") == before_n + 2


async def test_the_metered_embedder_counts_texts_and_is_otherwise_the_inner_one() -> None:
    inner = FakeEmbedder()
    embedder = MeteredEmbedder(inner)
    before = _sample("mnemo_embedding_texts_total", kind="store")
    before_q = _sample("mnemo_embedding_texts_total", kind="query")
    vectors = await embedder.embed(["one", "two", "three"])
    assert (vectors == await inner.embed(["one", "two", "three"])).all()
    assert (await embedder.embed_query("q") == await inner.embed_query("q")).all()
    assert (embedder.model_name, embedder.dimension) == (inner.model_name, inner.dimension)
    assert _sample("mnemo_embedding_texts_total", kind="store") == before + 3
    assert _sample("mnemo_embedding_texts_total", kind="query") == before_q + 1


async def test_the_loop_lag_histogram_records_a_loop_held_by_blocking_work() -> None:
    def late() -> float:
        """Samples later than 0.25 s so far."""
        total = _sample("mnemo_event_loop_lag_seconds_count")
        return total - _sample("mnemo_event_loop_lag_seconds_bucket", le="0.25")

    before = late()
    watcher = asyncio.create_task(watch_loop_lag(every_s=0.01))
    try:
        await asyncio.sleep(0.05)  # the watcher is sleeping on its timer now
        time.sleep(0.3)  # a step that holds the loop, as CPU-bound work on it would
        deadline = asyncio.get_running_loop().time() + 5.0
        while late() == before and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert late() == before + 1, "one sample waited out the blocked step"
    finally:
        watcher.cancel()
    server = await _serve({})
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
            text = (await client.get("/metrics")).text
        assert "# TYPE mnemo_event_loop_lag_seconds histogram" in text
    finally:
        await server.close()
