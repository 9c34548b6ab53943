"""What unit tests elsewhere may rely on from the fake, beyond the shared contract."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo_runtime.embeddings import FakeEmbedder


def test_vectors_are_stable_across_instances() -> None:
    a = FakeEmbedder(dimension=64).embed_sync(["stable across processes"])
    b = FakeEmbedder(dimension=64).embed_sync(["stable across processes"])
    np.testing.assert_array_equal(a, b)


def test_ignores_case_and_punctuation() -> None:
    a, b = FakeEmbedder().embed_sync(["Coffee, black!", "coffee black"])
    np.testing.assert_allclose(a, b)


def test_identical_word_sets_embed_identically() -> None:
    a, b = FakeEmbedder().embed_sync(["dog bites man", "man bites dog"])
    np.testing.assert_allclose(a, b)


def test_rejects_a_tiny_dimension() -> None:
    with pytest.raises(ValueError):
        FakeEmbedder(dimension=1)
