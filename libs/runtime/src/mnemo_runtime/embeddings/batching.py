"""Texts to padded WordPiece batches of similar length, shared by the local BERT embedders."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer


def max_seq_length(model_dir: Path) -> int:
    """The token limit sentence-transformers applies to this model (256 for all-MiniLM-L6-v2)."""
    # Well under BERT's 512 positions; honouring it is what keeps long texts' vectors equal to
    # the reference implementation's.
    config = model_dir / "sentence_bert_config.json"
    if not config.exists():
        return 256
    return int(json.loads(config.read_text())["max_seq_length"])


@dataclass(frozen=True, slots=True)
class TokenBatch:
    """Token ids and attention mask for some of a call's texts, padded on the right."""

    rows: npt.NDArray[np.intp]
    """Where each of these texts sits in the caller's list."""
    ids: npt.NDArray[np.int64]
    mask: npt.NDArray[np.int64]


class TokenBatcher:
    """Tokenises texts and groups them by token count, so padding stays small.

    Padding costs as much compute as real tokens, and conversational texts vary from 3 to
    hundreds of tokens: sorting by length before cutting batches keeps each batch's width
    close to its texts' own lengths.
    """

    def __init__(self, model_dir: Path, max_tokens: int) -> None:
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        # Padding is done per batch here, after sorting; the tokenizer's own would pad to the
        # longest text of the whole call (or to the fixed width its file may configure).
        self._tokenizer.no_padding()

    def batches(self, texts: Sequence[str], size: int) -> list[TokenBatch]:
        """Batches of at most ``size`` texts, shortest first; every text lands in one batch."""
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.array([len(e.ids) for e in encodings], dtype=np.intp)
        order = np.argsort(lengths, kind="stable")
        out: list[TokenBatch] = []
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            ids = np.zeros((len(rows), int(lengths[rows].max())), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, index in enumerate(rows):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = encodings[index].attention_mask
            out.append(TokenBatch(rows, ids, mask))
        return out


def batch_size_for(count: int, batch_size: int, workers: int) -> int:
    """``batch_size``, or smaller when there are too few texts to give every worker a batch."""
    return max(1, min(batch_size, -(-count // workers)))


def run_batches(run: Callable[[TokenBatch], None], batches: list[TokenBatch], workers: int) -> None:
    """Call ``run`` on every batch, on up to ``workers`` threads."""
    if workers > 1 and len(batches) > 1:
        # Each run writes its own rows of the result, and both numpy and onnxruntime release
        # the GIL while they compute, so the threads use separate cores.
        with ThreadPoolExecutor(min(workers, len(batches))) as pool:
            list(pool.map(run, batches))
    else:
        for batch in batches:
            run(batch)
