"""Throughput of an embedder on conversational sentences of 10-30 words, and query latency."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from typing import TypedDict

from mnemo_runtime.embeddings.ports import Embedder

_PEOPLE = (
    "Alice",
    "Bob",
    "My manager",
    "The new intern",
    "Priya",
    "Our landlord",
    "Dr. Okafor",
    "My sister",
    "The support team",
    "Jonas",
    "Mei",
    "The client from Lyon",
)
_CLAUSES = (
    "prefers short answers and hates long email threads",
    "asked me to move the quarterly review to next Thursday afternoon",
    "is allergic to peanuts, so the team dinner needs another restaurant",
    "switched from Python to Rust for the ingestion service last spring",
    "wants the invoice split across two cost centres",
    "mentioned that the flight to Nairobi was delayed by four hours",
    "keeps forgetting the Wi-Fi password for the office on the third floor",
    "is training for a half marathon in October and runs before work",
    "told me the apartment lease ends in June and rent goes up ten percent",
    "recommended a podcast about the history of cartography",
    "cannot join calls on Fridays because of school pickup",
    "is looking for a used cargo bike under eight hundred euros",
    "said the migration failed twice because the disk filled up",
    "would like a vegetarian option and a quiet table near the window",
    "has been learning Japanese with flashcards for about six months",
)
_OPENERS = ("", "Apparently", "Last week", "Just so you know,", "From the standup:", "Note that")
_TAILS = (
    "",
    "according to yesterday's call",
    "and asked me to remember it for later",
    "which changes the plan for next week",
    "so we should double check before booking anything",
    "but only if the budget is approved by the finance team",
    "as far as I can tell from the notes",
)
_QUESTIONS = (
    "What did {p} say about the deadline for the design review?",
    "Can you remind me what {p} wanted for the birthday present this year?",
    "Did {p} ever confirm whether the conference hotel includes breakfast?",
    "When is {p} back from the trip, and who covers the on-call rotation until then?",
)


class ThroughputReport(TypedDict):
    """Result of one benchmark run."""

    sentences_per_s: float
    n: int
    seconds: float
    model_name: str


class LatencyReport(TypedDict):
    """Latency of embedding one short search query at a time."""

    p50_ms: float
    p99_ms: float
    samples: int


def benchmark_sentences(n: int, seed: int = 7) -> list[str]:
    """n varied, deterministic sentences of roughly 10-30 words each."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(n):
        person = rng.choice(_PEOPLE)
        if rng.random() < 0.2:
            out.append(rng.choice(_QUESTIONS).format(p=person))
            continue
        tail = rng.choice(_TAILS)
        opener = rng.choice(_OPENERS)
        subject = _lower_determiner(person) if opener else person
        sentence = f"{opener} {subject} {rng.choice(_CLAUSES)}".lstrip()
        if tail:
            sentence += f", {tail}"
        out.append(sentence + ".")
    return out


def _lower_determiner(person: str) -> str:
    first, _, rest = person.partition(" ")
    return f"{first.lower()} {rest}" if first in {"The", "My", "Our"} else person


async def bench_embedding_throughput(embedder: Embedder, n: int = 1000) -> ThroughputReport:
    """Embed n sentences in one call after a short warm-up and report sentences per second."""
    sentences = benchmark_sentences(n)
    # Warm-up pays one-off costs (allocator growth, BLAS thread start) outside the timing.
    await embedder.embed(benchmark_sentences(16, seed=1))
    started = time.perf_counter()
    vectors = await embedder.embed(sentences)
    seconds = time.perf_counter() - started
    if vectors.shape != (n, embedder.dimension):
        raise RuntimeError(f"embedder returned shape {vectors.shape} for {n} sentences")
    return ThroughputReport(
        sentences_per_s=n / seconds if seconds > 0 else float("inf"),
        n=n,
        seconds=seconds,
        model_name=embedder.model_name,
    )


async def bench_query_latency(embedder: Embedder, samples: int = 200) -> LatencyReport:
    """Embed short search queries one call each, as a search does, and report p50 / p99."""
    rng = random.Random(11)
    queries = [rng.choice(_QUESTIONS).format(p=rng.choice(_PEOPLE)) for _ in range(samples)]
    for query in queries[:5]:
        await embedder.embed_query(query)
    took: list[float] = []
    for query in queries:
        started = time.perf_counter()
        await embedder.embed_query(query)
        took.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(took, n=100)
    return LatencyReport(p50_ms=cuts[49], p99_ms=cuts[98], samples=samples)


def main() -> None:
    """Print the local MiniLM embedder's throughput and query latency as JSON."""
    from mnemo_runtime.embeddings.factory import build_embedder

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=1000, help="sentences to embed")
    parser.add_argument("--numpy", action="store_true", help="the numpy embedder, not onnxruntime")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the embedder's")
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="cores to use; with --numpy, set OPENBLAS_NUM_THREADS=1",
    )
    parser.add_argument("--queries", type=int, default=200, help="single-query latency samples")
    args = parser.parse_args()
    kind = "minilm-numpy" if args.numpy else "minilm"
    embedder = build_embedder(kind, batch_size=args.batch_size, workers=args.workers)
    throughput = asyncio.run(bench_embedding_throughput(embedder, n=args.n))
    latency = asyncio.run(bench_query_latency(embedder, samples=args.queries))
    print(json.dumps({"kind": kind, **throughput, "query": latency}))


if __name__ == "__main__":
    main()
