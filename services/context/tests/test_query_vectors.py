"""Query vectors remembered per workspace, within a size and a time."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo_context.query_vectors import QueryVectors
from mnemo_runtime.embeddings import FakeEmbedder, Vector


class Counting(FakeEmbedder):
    """The fake embedder, counting the queries it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    async def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return await super().embed_query(text)


async def test_a_question_asked_again_in_its_workspace_is_remembered() -> None:
    embedder = Counting()
    vectors = QueryVectors(embedder, size=8, ttl_s=60.0)
    first = await vectors.vector("ws", "where does ann live?")
    again = await vectors.vector("ws", "where does ann live?")
    assert embedder.queries == ["where does ann live?"]
    assert np.array_equal(first, again)
    with pytest.raises(ValueError):
        again[0] = 1.0  # shared between reads: never written to


async def test_another_workspace_embeds_the_same_question_itself() -> None:
    embedder = Counting()
    vectors = QueryVectors(embedder, size=8, ttl_s=60.0)
    await vectors.vector("a", "same text")
    await vectors.vector("b", "same text")
    assert embedder.queries == ["same text", "same text"]


async def test_the_oldest_used_goes_first_beyond_the_size() -> None:
    embedder = Counting()
    vectors = QueryVectors(embedder, size=2, ttl_s=60.0)
    for text in ("one", "two", "one", "three", "one", "two"):
        await vectors.vector("ws", text)
    # "two" was the least recently used when "three" came, so it is embedded again.
    assert embedder.queries == ["one", "two", "three", "two"]


@pytest.mark.parametrize(("size", "ttl_s"), [(0, 60.0), (8, 0.0)])
async def test_without_room_or_time_every_question_is_embedded(size: int, ttl_s: float) -> None:
    embedder = Counting()
    vectors = QueryVectors(embedder, size=size, ttl_s=ttl_s)
    await vectors.vector("ws", "q")
    await vectors.vector("ws", "q")
    assert embedder.queries == ["q", "q"]
