"""Length-sorted, right-padded token batches."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo_runtime.embeddings.batching import TokenBatcher, batch_size_for, run_batches
from mnemo_runtime.embeddings.minilm import bundled_model_dir

TEXTS = [
    "a rather long sentence about the quarterly review that moved to Thursday afternoon",
    "ok",
    "",
    "Bob is moving to Lisbon in the spring.",
    "short one",
]


@pytest.fixture(scope="module")
def batcher() -> TokenBatcher:
    return TokenBatcher(bundled_model_dir(), max_tokens=12)


def test_every_text_lands_in_one_batch_shortest_first(batcher: TokenBatcher) -> None:
    batches = batcher.batches(TEXTS, 2)
    assert [len(b.rows) for b in batches] == [2, 2, 1]
    assert sorted(np.concatenate([b.rows for b in batches]).tolist()) == list(range(len(TEXTS)))
    lengths = [int(n) for b in batches for n in b.mask.sum(axis=1)]
    assert lengths == sorted(lengths)


def test_batches_are_padded_on_the_right_and_cut_at_the_limit(batcher: TokenBatcher) -> None:
    (batch,) = batcher.batches(TEXTS, len(TEXTS))
    assert batch.ids.shape == (len(TEXTS), 12)
    real = batch.mask.sum(axis=1)
    for row, count in enumerate(real):
        assert batch.mask[row, :count].all()
        assert not batch.mask[row, count:].any()
        assert not batch.ids[row, count:].any()
    # The empty text still has [CLS] and [SEP].
    assert real.min() == 2


@pytest.mark.parametrize(
    ("count", "size", "workers", "expected"),
    [(100, 16, 2, 16), (10, 16, 2, 5), (1, 16, 2, 1), (3, 16, 1, 3), (7, 16, 4, 2)],
)
def test_batch_size_shrinks_to_feed_every_worker(
    count: int, size: int, workers: int, expected: int
) -> None:
    assert batch_size_for(count, size, workers) == expected


@pytest.mark.parametrize("workers", [1, 3])
def test_run_batches_visits_every_batch_once(batcher: TokenBatcher, workers: int) -> None:
    seen: list[int] = []
    run_batches(lambda b: seen.extend(b.rows.tolist()), batcher.batches(TEXTS, 2), workers)
    assert sorted(seen) == list(range(len(TEXTS)))
