"""get_context latency against session size: the cost must follow the budget, not the history.

``python -m mnemo_cli.bench_context`` uses DATABASE_URL, or a throwaway local Postgres.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_cli.migrations import migrate_all
from mnemo_context.app import build_service
from mnemo_context.handlers import ContextService
from mnemo_runtime.embeddings import Embedder, build_embedder
from mnemo_runtime.embeddings.bench import benchmark_sentences
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.pg import open_pool
from mnemo_runtime.process import settle_heap
from mnemo_runtime.tokens import TokenCounter
from mnemo_runtime.vectors import EdgeVectorIndex, ObservationPayload, VectorPoint
from mnemo_schema.context_queries import DEFAULT_CONTEXT_TOKENS, ContextQuery

SUBJECTS = ("the garden", "a new job", "the trip to Lisbon", "painting", "the kids", "running")
VERBS = ("talked about", "is worried about", "is excited about", "asked a question about")
TEMPLATE = "{who} {verb} {what}; it came up again after {n} days and felt {mood}."
MOODS = ("calm", "urgent", "funny", "sad", "hopeful")
# The summarizer's cadence keeps summaries this many messages behind the newest one.
SUMMARY_LAG = 20
OBSERVATION_SENTENCES = 2_000
# Per-dimension noise on copies of a sentence's vector: cosine about 0.98 to the original.
JITTER = 0.01


def _texts(k: int = 240) -> list[str]:
    return [
        TEMPLATE.format(
            who=("Alice", "Bob")[i % 2],
            verb=VERBS[i % len(VERBS)],
            what=SUBJECTS[i % len(SUBJECTS)],
            n=i,
            mood=MOODS[i % len(MOODS)],
        )
        for i in range(k)
    ]


async def _fill(pool: Any, index: EdgeVectorIndex, embedder: Embedder, ws: str, n: int) -> None:
    """A session of ``n`` messages, summaries, and ``n`` observations of (alice, bob) with vectors.

    Observations cycle through 2,000 varied sentences; each copy's vector is its sentence's own
    embedding, jittered a little, standing for the copy's small difference in wording
    (embedding all 100,000 would take minutes). Random vectors would not do: no embedding model
    produces them, and a graph index finds a tenth of their true neighbours.
    """
    sentences = benchmark_sentences(OBSERVATION_SENTENCES)
    base = await embedder.embed(sentences)
    texts = _texts()
    counter = TokenCounter()
    tokens = counter.count_many(texts)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    async with pool.connection() as conn:
        await conn.execute("INSERT INTO workspaces (id, uid, metadata, configuration, created_at)"
                           " VALUES (%s, %s, '{}', '{}', now())", (ws, ws))  # fmt: skip
        async with conn.cursor().copy(
            "COPY messages (workspace, id, session_id, seq, peer_id, content, token_count,"
            " created_at) FROM STDIN"
        ) as copy:
            for i in range(1, n + 1):
                t = (i * 7) % len(texts)
                peer = ("alice", "bob")[i % 2]
                when = start + timedelta(seconds=i)
                await copy.write_row((ws, f"m{i}", "s", i, peer, texts[t], tokens[t], when))
        covered = max(n - SUMMARY_LAG, 1)
        for kind, words in (("short", 200), ("long", 900)):
            content = " ".join(["summary"] * words)
            await conn.execute(
                "INSERT INTO summaries (workspace, session_id, summary_type, seq, content,"
                " message_id, message_seq, messages_covered, token_count, created_at)"
                " VALUES (%s, 's', %s, 1, %s, %s, %s, %s, %s, now())",
                (ws, kind, content, f"m{covered}", covered, covered, words),
            )
        async with conn.cursor().copy(
            "COPY observations (workspace, id, observer, observed, session_id, level, content,"
            " content_key, origin, created_at, seq, token_count) FROM STDIN"
        ) as copy:
            for i in range(n):
                text = f"{sentences[i % len(sentences)]} (#{i})"
                oid = f"{ws}-o{i}"
                # Counted once, as the memory projection does when it writes an observation.
                count = counter.count(text)
                row = (
                    ws,
                    oid,
                    "alice",
                    "bob",
                    "s",
                    "explicit",
                    text,
                    text,
                    "bench",
                    start,
                    i,
                    count,
                )
                await copy.write_row(row)
        await conn.execute("ANALYZE messages")
        await conn.execute("ANALYZE observations")
    # Point ids are global across workspaces, like observation ids.
    rng = np.random.default_rng(n)
    for offset in range(0, n, 2_000):
        size = min(2_000, n - offset)
        rows = np.arange(offset, offset + size) % len(sentences)
        jitter = rng.standard_normal((size, embedder.dimension), dtype=np.float32) * JITTER
        vectors = base[rows] + jitter
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        payload = ObservationPayload(ws, "alice", "bob", "explicit", 1.7e9, "s")
        await index.upsert(
            [VectorPoint(f"{ws}-o{offset + i}", vectors[i], payload) for i in range(size)]
        )


def _percentiles(latencies: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(latencies) * 1000
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99))}


async def _time(
    service: ContextService, spaces: Mapping[int, str], query: ContextQuery, samples: int
) -> dict[int, dict[str, Any]]:
    """Each size's figures, its calls interleaved with the other sizes' calls.

    Interleaving puts every size under the same machine conditions: timed one after the other,
    a drift in the machine's speed between the runs (often 20-40% on a shared host) would show
    as growth with history.
    """
    for _ in range(10):
        for ws in spaces.values():
            await service.context(ws, query)
    latencies: dict[int, list[float]] = {n: [] for n in spaces}
    last: dict[int, Any] = {}
    for _ in range(samples):
        for n, ws in spaces.items():
            started = time.perf_counter()
            last[n] = await service.context(ws, query)
            latencies[n].append(time.perf_counter() - started)
    return {
        n: {
            **_percentiles(latencies[n]),
            "tokens": last[n].tokens,
            "messages": len(last[n].messages),
        }
        for n in spaces
    }


async def _embedding(embedder: Embedder, samples: int) -> dict[str, float]:
    """What embedding the search query alone costs: the floor of the search_query case."""
    latencies = []
    for _ in range(samples):
        started = time.perf_counter()
        await embedder.embed_query(SEARCH)
        latencies.append(time.perf_counter() - started)
    return _percentiles(latencies)


SEARCH = "What is Bob excited about?"
CASES = {
    "summary": ContextQuery(session_id="s"),
    "no_summary": ContextQuery(session_id="s", summary=False),
    "search_query": ContextQuery(
        session_id="s",
        peer_target="bob",
        peer_perspective="alice",
        slice={"search_query": SEARCH, "search_top_k": 10},
    ),
}


async def bench_get_context(
    database_url: str,
    sizes: Sequence[int] = (1_000, 100_000),
    samples: int = 300,
    embedder: Embedder | None = None,
    optimize: bool = False,
) -> dict[str, Any]:
    """p50 / p99 of get_context at the default budget for a session of each size.

    ``optimize`` compacts the embedded index after loading (graphs for large scopes), as a
    maintenance window would; without it a large scope is searched by brute force.
    """
    # The embedder the services run (MNEMO_MEMORY_EMBED_WORKERS defaults to 2).
    embedder = embedder or build_embedder("minilm", workers=2)
    pool = await open_pool(database_url, min_size=2, max_size=4)
    results: dict[str, Any] = {
        "budget": DEFAULT_CONTEXT_TOKENS, "optimized_index": optimize, "sizes": {},
    }  # fmt: skip
    try:
        await migrate_all(database_url)
        with tempfile.TemporaryDirectory() as folder:
            index = EdgeVectorIndex(Path(folder))
            await index.ensure(embedder.dimension, embedder.model_name)
            service = await build_service(pool, MemoryAdapters(embedder, index))
            try:
                spaces: dict[int, str] = {}
                for n in sizes:
                    spaces[n] = f"bench-ctx-{uuid.uuid4().hex[:8]}"
                    await _fill(pool, index, embedder, spaces[n], n)
                if optimize:
                    await index.optimize()
                # As a service process does once started: what is loaded for good is frozen,
                # so full collections do not walk it (they stalled 1% of calls by over 100 ms).
                settle_heap()
                timed = {
                    case: await _time(service, spaces, query, samples)
                    for case, query in CASES.items()
                }
                results["sizes"] = {n: {case: timed[case][n] for case in CASES} for n in sizes}
            finally:
                await index.close()
    finally:
        await pool.close()
    results["query_embedding"] = await _embedding(embedder, samples)
    small, large = (results["sizes"][n] for n in (min(sizes), max(sizes)))
    results["p50_growth"] = {case: large[case]["p50_ms"] / small[case]["p50_ms"] for case in CASES}
    return results


async def run(optimize: bool) -> dict[str, Any]:
    """The benchmark on DATABASE_URL, or on a throwaway local Postgres."""
    if url := os.environ.get("DATABASE_URL"):
        return await bench_get_context(url, optimize=optimize)
    from mnemo_runtime.stack import LocalPostgres, free_port

    with tempfile.TemporaryDirectory() as folder:
        local = LocalPostgres(Path(folder), free_port(), durable=False)
        try:
            return await bench_get_context(local.start(), optimize=optimize)
        finally:
            local.stop()


if __name__ == "__main__":
    optimize = os.environ.get("MNEMO_BENCH_OPTIMIZE", "") == "1"
    print(json.dumps(asyncio.run(run(optimize)), indent=2))
