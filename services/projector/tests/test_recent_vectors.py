"""The memory projection embeds each distinct text once among those seen lately."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from prometheus_client import REGISTRY

from mnemo_projector.memory_vectors import RecentVectors
from mnemo_runtime.embeddings import Embedder, Vectors, build_embedder
from mnemo_runtime.embeddings.metered import MeteredEmbedder


class Counted(MeteredEmbedder):
    """The fake embedder, recording what it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.asked: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.asked.append(list(texts))
        return await super().embed(texts)


def _recalled() -> float:
    return REGISTRY.get_sample_value("mnemo_embedding_recalled_texts_total") or 0.0


async def test_twins_are_embedded_once_and_each_text_gets_its_own_vector() -> None:
    fake = build_embedder("fake")
    counted = Counted(fake)
    recent = RecentVectors(counted)
    before = _recalled()
    texts = ["Ann moved to Lisbon.", "Ann has a dog.", "Ann moved to Lisbon."]
    got = await recent.embed(texts)
    assert counted.asked == [["Ann moved to Lisbon.", "Ann has a dog."]]
    expected = await fake.embed(texts)
    assert all(np.allclose(g, e) for g, e in zip(got, expected, strict=True))
    # A later batch's twin of an earlier text is not embedded again.
    again = await recent.embed(["Ann has a dog.", "Ann plays the cello."])
    assert counted.asked[-1] == ["Ann plays the cello."]
    assert np.allclose(again[0], expected[1])
    assert _recalled() - before == 2


async def test_only_the_latest_texts_are_kept() -> None:
    counted = Counted(build_embedder("fake"))
    recent = RecentVectors(counted, size=2)
    await recent.embed(["a one", "b two", "c three"])
    await recent.embed(["a one", "c three"])
    assert counted.asked[-1] == ["a one"]  # the oldest went; the newest stayed
    assert await recent.embed([]) == []
