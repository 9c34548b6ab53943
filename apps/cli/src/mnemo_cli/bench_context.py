"""Read-path latency against history: get_context, search, conclusions.query and the dialectic's
prefetch, through the context service and its retrieval engine, at 1,000 and at 100,000
messages and observations in one representation; and what each read costs in CPU, this
process's (the reading one: the query's embedding, psycopg, ranking and packing) and, when
the Postgres runs on this host, that of the backends serving the benchmark's connections.

``python -m mnemo_cli.bench_context`` uses DATABASE_URL, or a throwaway local Postgres.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_cli.bench_cpu import Backends, backends_spent, own_cpu
from mnemo_cli.bench_fill import build_graphs, drop_graphs, fill_representation
from mnemo_cli.local import SPLIT
from mnemo_cli.migrations import migrate_all
from mnemo_context.app import build_engine, build_service
from mnemo_context.handlers import ContextService
from mnemo_context.settings import ContextSettings
from mnemo_projector.passages import PassageProjection
from mnemo_runtime.embeddings import Embedder, build_embedder
from mnemo_runtime.embeddings.bench import benchmark_sentences
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.pg import Pool, open_pool
from mnemo_runtime.process import settle_heap
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema.context_queries import (
    DEFAULT_CONTEXT_TOKENS,
    ContextQuery,
    ObservationSearchQuery,
    SearchQuery,
)
from mnemo_schema.retrieval import RetrievalQuery

SENTENCES = 2_000
QUESTIONS = (
    "What did Priya say about the deadline for the design review?",
    "Who is allergic to peanuts?",
    "When is the quarterly review?",
    "What is Bob excited about?",
    "Which podcast was recommended?",
    "Who is learning Japanese, and how?",
    "Where did the flight to Nairobi go wrong?",
    "What does the client from Lyon want?",
)
Call = Callable[[ContextService, str, str], Awaitable[Any]]
# The sizes take turns this many calls at a time, and the CPU a size's calls spent is read
# around each turn: the readings (getrusage, a few /proc files) stay out of the calls' times
# and cost a tenth as often.
TURN = 10
# The reads' connections are planned as the read process's are (``mnemo up`` and the chart set
# it): each prepared statement once, not for each call's values.
READ_SESSION = {"plan_cache_mode": SPLIT["read"]["MNEMO_PG_PLAN_CACHE_MODE"]}


def _context(summary: bool, search: bool) -> Call:
    async def call(service: ContextService, ws: str, question: str) -> Any:
        slice_ = {"search_query": question, "search_top_k": 10} if search else {}
        query = ContextQuery(
            session_id="s", summary=summary, peer_target="bob" if search else None, slice=slice_
        )
        return await service.context(ws, query)

    return call


async def _search(service: ContextService, ws: str, question: str) -> Any:
    return await service.search(ws, SearchQuery(query=question, limit=10))


async def _conclusions(service: ContextService, ws: str, question: str) -> Any:
    query = ObservationSearchQuery(observer="bob", observed="bob", query=question, top_k=10)
    return await service.observation_search(ws, query)


async def _prefetch(service: ContextService, ws: str, question: str) -> Any:
    # The dialectic's prefetch: the 12 best observations within a cosine distance of 0.9.
    query = RetrievalQuery(
        query=question,
        observer="bob",
        observed="bob",
        messages=0,
        observations=12,
        max_distance=0.9,
    )
    return await service.retrieve(ws, query)


CASES: dict[str, Call] = {
    "summary": _context(summary=True, search=False),
    "no_summary": _context(summary=False, search=False),
    "search_query": _context(summary=True, search=True),
    "search": _search,
    "conclusions_query": _conclusions,
    "dialectic_prefetch": _prefetch,
}


def _percentiles(latencies: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(latencies) * 1000
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {"p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99)}


async def _time(
    service: ContextService,
    spaces: Mapping[int, str],
    call: Call,
    samples: int,
    backends: Backends | None = None,
) -> dict[int, dict[str, Any]]:
    """Each size's figures, its calls interleaved with the other sizes' calls, ``TURN`` at a
    time; with them the CPU milliseconds a call cost this process (``reader``) and the
    ``backends`` serving its connections (``postgres``), when they are seen on this host.

    Interleaving puts every size under the same machine conditions: timed one after the other,
    a drift in the machine's speed between the runs (often 20-40% on a shared host) would show
    as growth with history.
    """
    for i in range(10):
        for ws in spaces.values():
            await call(service, ws, QUESTIONS[i % len(QUESTIONS)])
    latencies: dict[int, list[float]] = {n: [] for n in spaces}
    cpu: dict[int, dict[str, float]] = {n: {"reader": 0.0, "postgres": 0.0} for n in spaces}
    seen = False
    last: dict[int, Any] = {}
    for start in range(0, samples, TURN):
        questions = [
            QUESTIONS[i % len(QUESTIONS)] for i in range(start, min(samples, start + TURN))
        ]
        for n, ws in spaces.items():
            server = backends.cpu() if backends else {}
            own = own_cpu()
            for question in questions:
                started = time.perf_counter()
                last[n] = await call(service, ws, question)
                latencies[n].append(time.perf_counter() - started)
            cpu[n]["reader"] += own_cpu() - own
            if backends and (after := backends.cpu()):
                seen = True
                cpu[n]["postgres"] += backends_spent(server, after)
    out: dict[int, dict[str, Any]] = {}
    for n in spaces:
        out[n] = _percentiles(latencies[n])
        per_call = {k: round(v * 1000 / samples, 2) for k, v in cpu[n].items()}
        if not seen:
            del per_call["postgres"]
        out[n]["cpu_ms"] = per_call
        if hasattr(last[n], "tokens"):
            out[n] |= {"tokens": last[n].tokens, "messages": len(last[n].messages)}
    return out


async def _embedding(embedder: Embedder, samples: int) -> dict[str, float]:
    """What embedding the search query alone costs: the floor of the search cases."""
    latencies = []
    for i in range(samples):
        started = time.perf_counter()
        await embedder.embed_query(QUESTIONS[i % len(QUESTIONS)])
        latencies.append(time.perf_counter() - started)
    return _percentiles(latencies)


async def read_pool(database_url: str, backends: Backends) -> Pool:
    """A pool for the benchmark's reads, its connections set as the read process's are and
    each backend's pid told to ``backends``."""
    return await open_pool(
        database_url, min_size=2, max_size=8, on_connect=backends.add, settings=READ_SESSION
    )


async def bench_get_context(
    database_url: str,
    sizes: Sequence[int] = (1_000, 100_000),
    samples: int = 300,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """p50 / p95 / p99 of each read at the default budget, for a history of each size, and its
    CPU (Postgres's too, when the server runs on this host)."""
    # The embedder the services run (MNEMO_MEMORY_EMBED_WORKERS defaults to 2).
    embedder = embedder or build_embedder("minilm", workers=2)
    backends = Backends()
    pool = await read_pool(database_url, backends)
    results: dict[str, Any] = {"budget": DEFAULT_CONTEXT_TOKENS, "sizes": {}, "load_s": {}}
    try:
        index = PgVectorIndex(pool)
        await migrate_all(database_url)
        async with pool.connection() as conn:
            await PassageProjection(embedder).setup(conn)
        await index.ensure(embedder.dimension, embedder.model_name)
        sentences = benchmark_sentences(SENTENCES)
        base = await embedder.embed(sentences)
        # Every read embeds its question: the few questions here repeat, and a remembered
        # query vector would leave the embedding out of the figures.
        memory = MemoryAdapters(embedder, index)
        engine = build_engine(pool, memory, ContextSettings(query_cache=0))
        service = await build_service(pool, memory, engine)
        spaces: dict[int, str] = {}
        start = datetime(2025, 1, 1, tzinfo=UTC)
        await drop_graphs(pool)
        for n in sizes:
            spaces[n] = f"bench-ctx-{uuid.uuid4().hex[:8]}"
            began = time.perf_counter()
            await fill_representation(
                pool,
                spaces[n],
                n,
                sentences,
                base,
                embedder.model_name,
                start,
                step=timedelta(seconds=1),
            )
            results["load_s"][n] = time.perf_counter() - began
        began = time.perf_counter()
        await build_graphs(pool)
        results["graphs_s"] = time.perf_counter() - began
        # As a service process does once started: what is loaded for good is frozen, so full
        # collections do not walk it (they stalled 1% of calls by over 100 ms).
        settle_heap()
        timed = {
            case: await _time(service, spaces, call, samples, backends)
            for case, call in CASES.items()
        }
        results["sizes"] = {n: {case: timed[case][n] for case in CASES} for n in sizes}
    finally:
        await pool.close()
    results["query_embedding"] = await _embedding(embedder, samples)
    small, large = (results["sizes"][n] for n in (min(sizes), max(sizes)))
    results["p50_growth"] = {case: large[case]["p50_ms"] / small[case]["p50_ms"] for case in CASES}
    return results


async def run() -> dict[str, Any]:
    """The benchmark on DATABASE_URL, or on a throwaway local Postgres."""
    if url := os.environ.get("DATABASE_URL"):
        return await bench_get_context(url)
    from mnemo_runtime.stack import LocalPostgres, free_port

    with tempfile.TemporaryDirectory() as folder:
        local = LocalPostgres(Path(folder), free_port(), durable=False)
        try:
            return await bench_get_context(local.start())
        finally:
            local.stop()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run()), indent=2))
