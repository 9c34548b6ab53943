"""Prefetch latency: embed the question and search its representation, on a populated index.

python -m mnemo_dialectic.bench [observations] populates a throwaway embedded index with MiniLM
vectors spread over several representations and prints the latency figures as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.vectors import (
    ObservationPayload,
    Scope,
    SearchFilters,
    VectorPoint,
    build_vector_index,
)

QUESTIONS = (
    "Where does she live now?",
    "What does he do for work?",
    "Which sports does she play?",
    "Who is her best friend?",
    "What did he do last weekend?",
    "What are her hobbies?",
    "Has she ever been to Japan?",
    "What pets does he have?",
)
TOPICS = ("work", "family", "travel", "food", "music", "sport", "pets", "health", "books", "home")


async def populate(memory: MemoryAdapters, scopes: Sequence[Scope], per_scope: int) -> int:
    """Fill each scope with ``per_scope`` embedded observations; the number of points written."""
    written = 0
    for s_i, scope in enumerate(scopes):
        texts = [
            f"{scope.observed} mentioned {TOPICS[(i + s_i) % len(TOPICS)]} detail number {i}"
            for i in range(per_scope)
        ]
        for start in range(0, len(texts), 256):
            batch = texts[start : start + 256]
            vectors = await memory.embedder.embed(batch)
            await memory.index.upsert(
                [
                    VectorPoint(
                        f"{scope.observer}-{scope.observed}-{start + j}",
                        vectors[j],
                        ObservationPayload(
                            *(scope.workspace, scope.observer, scope.observed),
                            level="explicit",
                            created_at=float(start + j),
                        ),
                    )
                    for j in range(len(batch))
                ]
            )
            written += len(batch)
    return written


async def bench_prefetch(
    memory: MemoryAdapters,
    scope: Scope,
    *,
    questions: Sequence[str] = QUESTIONS,
    rounds: int = 25,
    limit: int = 12,
) -> dict[str, float]:
    """Latency of the dialectic's prefetch (embed + scoped search), in milliseconds."""
    await memory.embedder.embed_query("warm up")
    embed_ms: list[float] = []
    total_ms: list[float] = []
    for _ in range(rounds):
        for q in questions:
            t0 = time.perf_counter()
            vector = await memory.embedder.embed_query(q)
            t1 = time.perf_counter()
            await memory.index.search(
                vector, scope, limit=limit, filters=SearchFilters.of(), max_distance=0.9
            )
            t2 = time.perf_counter()
            embed_ms.append((t1 - t0) * 1000)
            total_ms.append((t2 - t0) * 1000)
    total = np.asarray(total_ms)
    return {
        "queries": float(len(total_ms)),
        "p50_ms": float(np.percentile(total, 50)),
        "p95_ms": float(np.percentile(total, 95)),
        "max_ms": float(total.max()),
        "embed_p95_ms": float(np.percentile(np.asarray(embed_ms), 95)),
    }


async def run(per_scope: int = 2500) -> dict[str, float]:
    """Prefetch figures on a throwaway embedded index of four representations."""
    # The default local embedder on two cores, as MemorySettings builds it for the service.
    embedder = build_embedder("minilm", workers=2)
    with tempfile.TemporaryDirectory() as tmp:
        index = build_vector_index(None, Path(tmp))
        await index.ensure(embedder.dimension, embedder.model_name)
        memory = MemoryAdapters(embedder, index)
        scopes = [Scope("bench", f"peer{i}", f"peer{(i + 1) % 4}") for i in range(4)]
        points = await populate(memory, scopes, per_scope)
        figures = await bench_prefetch(memory, scopes[0])
        await memory.close()
    return {"points": float(points), "scopes": float(len(scopes)), **figures}


if __name__ == "__main__":
    per_scope = int(sys.argv[1]) if len(sys.argv) > 1 else 2500
    print(json.dumps(asyncio.run(run(per_scope)), indent=2))
