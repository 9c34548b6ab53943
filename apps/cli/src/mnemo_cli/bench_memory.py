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
