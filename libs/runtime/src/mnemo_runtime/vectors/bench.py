"""Filtered-search benchmark of a VectorIndex: random unit vectors spread over many scopes.

`python -m mnemo_runtime.vectors.bench [n] [directory]` runs it on the embedded store.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mnemo_runtime.vectors.ports import (
    Level,
    ObservationPayload,
    Scope,
    SearchFilters,
    VectorIndex,
    VectorPoint,
)

_LEVELS: tuple[Level, ...] = ("explicit", "deductive", "inductive", "contradiction")
_BENCH_MODEL = "bench-random-unit"


def _scopes(count: int) -> list[Scope]:
    # Scopes share their observers and observed peers, as in a real workspace, so that
    # scope isolation is exercised by the filter rather than by disjoint identifiers.
    side = max(1, int(np.ceil(np.sqrt(count))))
    return [Scope("bench", f"peer-{i // side}", f"peer-{i % side}") for i in range(count)]


async def bench_filtered_search(
    index: VectorIndex,
    n: int = 100_000,
    dim: int = 384,
    queries: int = 200,
    *,
    scopes: int = 50,
    batch: int = 1_000,
    seed: int = 0,
) -> dict[str, float]:
    """Loads `n` points into a fresh `index`, then times scoped, level-filtered top-10 searches."""
    rng = np.random.default_rng(seed)
    keys = _scopes(scopes)
    await index.ensure(dim, _BENCH_MODEL)
    started = time.perf_counter()
    for offset in range(0, n, batch):
        size = min(batch, n - offset)
        vectors = rng.standard_normal((size, dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        points = []
        for i in range(size):
            k = offset + i
            scope = keys[k % scopes]
            payload = ObservationPayload(
                workspace=scope.workspace,
                observer=scope.observer,
                observed=scope.observed,
                level=_LEVELS[(k // scopes) % len(_LEVELS)],
                created_at=1.7e9 + k,
                session_id=f"session-{k % 97}",
            )
            points.append(VectorPoint(f"obs-{k}", vectors[i], payload))
        await index.upsert(points)
    load_s = time.perf_counter() - started

    wanted = SearchFilters(levels=frozenset({"explicit", "deductive"}))
    latencies: list[float] = []
    for q in range(queries):
        query = rng.standard_normal(dim, dtype=np.float32)
        scope = keys[int(rng.integers(scopes))] if q else keys[0]
        started = time.perf_counter()
        await index.search(query, scope, limit=10, filters=wanted)
        latencies.append((time.perf_counter() - started) * 1000.0)
    p50, p95 = np.percentile(latencies, [50, 95])
    return {
        "n": float(n),
        "dim": float(dim),
        "queries": float(queries),
        "p50_ms": round(float(p50), 3),
        "p95_ms": round(float(p95), 3),
        "load_s": round(load_s, 2),
    }


async def _main(n: int, directory: Path | None) -> None:
    from mnemo_runtime.vectors.edge import EdgeVectorIndex

    with tempfile.TemporaryDirectory(prefix="mnemo-vectors-") as scratch:
        index = EdgeVectorIndex(directory or Path(scratch))
        try:
            print(await bench_filtered_search(index, n=n))
        finally:
            await index.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(_main(int(args[0]) if args else 100_000, Path(args[1]) if len(args) > 1 else None))
