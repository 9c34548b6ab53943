"""The throughput benchmark runs and reports; timing itself is not asserted."""

from __future__ import annotations

from mnemo_runtime.embeddings import FakeEmbedder
from mnemo_runtime.embeddings.bench import (
    bench_embedding_throughput,
    bench_query_latency,
    benchmark_sentences,
)


def test_sentences_are_varied_and_sentence_sized() -> None:
    sentences = benchmark_sentences(500)
    words = [len(s.split()) for s in sentences]
    assert len(set(sentences)) > 250
    assert min(words) >= 8
    assert max(words) <= 32
    assert benchmark_sentences(500) == sentences


async def test_reports_sentences_per_second() -> None:
    report = await bench_embedding_throughput(FakeEmbedder(), n=50)
    assert report["n"] == 50
    assert report["sentences_per_s"] > 0
    assert report["model_name"] == "fake-hashed-bow"


async def test_reports_query_latency() -> None:
    report = await bench_query_latency(FakeEmbedder(), samples=20)
    assert report["samples"] == 20
    assert 0 < report["p50_ms"] <= report["p99_ms"]
