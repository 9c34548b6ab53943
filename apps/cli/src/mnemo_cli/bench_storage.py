"""The embedded vector stores side by side: pgvector in Postgres and the qdrant-edge shard.

The same points in both: ``n`` observations in one representation and ``n`` message passages of
it (MiniLM vectors of varied sentences, jittered; see ``bench_fill``), searched for the 10
nearest inside the representation with the questions the read benchmarks ask. The shard is
timed as the memory projection leaves it between optimisations (new points scanned) and after
``optimize()``, which builds its graphs and holds the process meanwhile.

``python -m mnemo_cli.bench_storage [n]`` prints the figures as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mnemo_cli.bench_context import QUESTIONS
from mnemo_cli.bench_fill import JITTER
from mnemo_cli.migrations import migrate_all
from mnemo_runtime.embeddings import Embedder, Vectors, build_embedder
from mnemo_runtime.embeddings.bench import benchmark_sentences
from mnemo_runtime.pg import open_pool
from mnemo_runtime.stack import LocalPostgres, free_port
from mnemo_runtime.vectors import (
    EdgeVectorIndex,
    ObservationPayload,
    PgVectorIndex,
    Scope,
    VectorIndex,
    VectorPoint,
)

OBSERVATIONS = Scope("bench", "alice", "bob")
# Passages stand beside the observations as points of their own representation-sized set.
PASSAGES = Scope("bench", "bob", "bob")
BATCH = 2_000


def _points(base: Vectors, n: int, scope: Scope, seed: int) -> list[list[VectorPoint]]:
    rng = np.random.default_rng(seed)
    payload = ObservationPayload(scope.workspace, scope.observer, scope.observed, "explicit", 1.7e9)
    out = []
    for at in range(0, n, BATCH):
        size = min(BATCH, n - at)
        v = base[np.arange(at, at + size) % len(base)]
        v = v + rng.standard_normal(v.shape, dtype=np.float32) * JITTER
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out.append([VectorPoint(f"{scope.observer}-{at + i}", v[i], payload) for i in range(size)])
    return out


async def _load(index: VectorIndex, base: Vectors, n: int) -> float:
    began = time.perf_counter()
    for scope, seed in ((OBSERVATIONS, 1), (PASSAGES, 2)):
        for batch in _points(base, n, scope, seed):
            await index.upsert(batch)
    return time.perf_counter() - began


async def _search(index: VectorIndex, queries: Vectors, rounds: int) -> dict[str, float]:
    for q in queries:
        await index.search(q, OBSERVATIONS, limit=10)
    took = []
    for _ in range(rounds):
        for q in queries:
            began = time.perf_counter()
            await index.search(q, OBSERVATIONS, limit=10)
            took.append((time.perf_counter() - began) * 1000)
    p50, p95 = np.percentile(took, [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95)}


async def compare_stores(
    n: int = 100_000, rounds: int = 25, embedder: Embedder | None = None
) -> dict[str, Any]:
    """p50 / p95 of a scoped top-10 search in each store, and what loading cost."""
    embedder = embedder or build_embedder("minilm", workers=2)
    base = await embedder.embed(benchmark_sentences(2_000))
    queries = np.stack([await embedder.embed_query(q) for q in QUESTIONS])
    out: dict[str, Any] = {"points": 2 * n, "in_representation": n}
    with tempfile.TemporaryDirectory() as folder:
        local = LocalPostgres(Path(folder) / "pg", free_port(), durable=False)
        url = local.start()
        # The schema the services make (the vector index records its model in it).
        await migrate_all(url)
        pool = await open_pool(url, min_size=1, max_size=2)
        try:
            pg = PgVectorIndex(pool)
            await pg.ensure(embedder.dimension, "bench")
            load = await _load(pg, base, n)
            async with pool.connection() as conn:
                await conn.execute("VACUUM ANALYZE observation_vectors")
            out["pgvector"] = {**await _search(pg, queries, rounds), "load_s": load}
        finally:
            await pool.close()
            local.stop()
        edge = EdgeVectorIndex(Path(folder) / "edge")
        try:
            await edge.ensure(embedder.dimension, "bench")
            load = await _load(edge, base, n)
            out["edge"] = {**await _search(edge, queries, rounds), "load_s": load}
            began = time.perf_counter()
            await edge.optimize()
            optimise = time.perf_counter() - began
            out["edge_optimized"] = {**await _search(edge, queries, rounds), "optimize_s": optimise}
        finally:
            await edge.close()
    return out


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print(json.dumps(asyncio.run(compare_stores(size)), indent=2))
