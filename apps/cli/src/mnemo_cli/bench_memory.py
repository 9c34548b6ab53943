"""Memory benchmarks: freshness through the whole write path, embedding throughput."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid

import httpx

from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.embeddings.bench import bench_embedding_throughput, bench_query_latency

FACTS = [
    "I adopted a rescue dog named {n} last spring.",
    "My sister {n} is moving to Berlin for her new job.",
    "I have been learning to play the cello for {n} months.",
    "I started working as a nurse at the clinic on {n} Street.",
    "My favourite food is the {n} curry my grandmother makes.",
]


async def freshness(http: httpx.AsyncClient, samples: int = 40) -> dict[str, float]:
    """Message accepted -> an observation from it is returned by a scoped semantic query."""
    ws = f"fresh-{uuid.uuid4().hex[:8]}"
    (await http.post("/v3/workspaces", json={"id": ws})).raise_for_status()
    (await http.post(f"/v3/workspaces/{ws}/sessions", json={"id": "s"})).raise_for_status()
    lat: list[float] = []
    for i in range(samples):
        word = f"Zed{i}x"
        text = FACTS[i % len(FACTS)].format(n=word)
        body = {"messages": [{"peer_id": "user", "content": text}]}
        t0 = time.perf_counter()
        (await http.post(f"/v3/workspaces/{ws}/sessions/s/messages", json=body)).raise_for_status()
        query = {
            "query": text,
            "top_k": 3,
            "filters": {"observer_id": "user", "observed_id": "user"},
        }
        deadline = t0 + 30
        while time.perf_counter() < deadline:
            r = await http.post(f"/v3/workspaces/{ws}/conclusions/query", json=query)
            if any(word in c["content"] for c in r.json()):
                lat.append((time.perf_counter() - t0) * 1000)
                break
            await asyncio.sleep(0.01)
        else:
            raise RuntimeError(f"no observation from {text!r} within 30s")
    q = statistics.quantiles(lat, n=100)
    return {"samples": len(lat), "p50_ms": q[49], "p99_ms": q[98]}


async def freshness_while_reading(http: httpx.AsyncClient, samples: int = 30) -> dict[str, float]:
    """A chat of two peers, each observing the other, while another client reads without a
    pause: message accepted -> an observation from it returned in both representations (the
    speaker's own and the other peer's). Reads take precedence over memory formation; a
    conversation's formation must not wait behind them."""
    ws = f"fresh-reads-{uuid.uuid4().hex[:8]}"
    (await http.post("/v3/workspaces", json={"id": ws})).raise_for_status()
    peers = {"user": {}, "bob": {"observe_others": True}}
    body = {"id": "s", "peers": peers}
    (await http.post(f"/v3/workspaces/{ws}/sessions", json=body)).raise_for_status()
    stop = asyncio.Event()
    reads = 0

    async def reader() -> None:
        nonlocal reads
        query = {
            "query": "What does the user do?",
            "top_k": 5,
            "filters": {"observer_id": "bob", "observed_id": "user"},
        }
        while not stop.is_set():
            r = await http.post(f"/v3/workspaces/{ws}/conclusions/query", json=query)
            r.raise_for_status()
            reads += 1

    async def found(text: str, word: str, observer: str, t0: float) -> float:
        query = {
            "query": text,
            "top_k": 3,
            "filters": {"observer_id": observer, "observed_id": "user"},
        }
        while time.perf_counter() < t0 + 30:
            r = await http.post(f"/v3/workspaces/{ws}/conclusions/query", json=query)
            if any(word in c["content"] for c in r.json()):
                return (time.perf_counter() - t0) * 1000
            await asyncio.sleep(0.01)
        raise RuntimeError(f"no observation by {observer} from {text!r} within 30s")

    reading = asyncio.create_task(reader())
    lat: list[float] = []
    started = time.perf_counter()
    try:
        for i in range(samples):
            word = f"Ry{i}q"
            text = FACTS[i % len(FACTS)].format(n=word)
            posted = {"messages": [{"peer_id": "user", "content": text}]}
            t0 = time.perf_counter()
            url = f"/v3/workspaces/{ws}/sessions/s/messages"
            (await http.post(url, json=posted)).raise_for_status()
            both = await asyncio.gather(*(found(text, word, p, t0) for p in ("user", "bob")))
            lat.append(max(both))
    finally:
        stop.set()
        await reading
    q = statistics.quantiles(lat, n=100)
    seconds = time.perf_counter() - started
    return {"samples": len(lat), "p50_ms": q[49], "p99_ms": q[98], "reads_per_s": reads / seconds}


async def embedding(n: int = 2000, workers: int = 2) -> dict[str, float]:
    """Throughput and query latency of the default local embedder (MiniLM on onnxruntime)."""
    embedder = build_embedder("minilm", workers=workers)
    throughput = await bench_embedding_throughput(embedder, n=n)
    latency = await bench_query_latency(embedder)
    return {
        "sentences_per_s": throughput["sentences_per_s"],
        "query_p50_ms": latency["p50_ms"],
        "query_p99_ms": latency["p99_ms"],
    }
