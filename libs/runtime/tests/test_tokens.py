"""The token counter agrees with the bundled tokenizer's own pipeline on every text."""

from __future__ import annotations

import json
import os
import random
import string
from pathlib import Path

import pytest

from mnemo_runtime.tokens import TokenCounter, _tokenizer

DATASETS = Path(
    os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / ".." / "shared" / "datasets")
).resolve()
LOCOMO = DATASETS / "locomo" / "locomo-dev5.json"


def reference(texts: list[str]) -> list[int]:
    """Counts from the full tokenizer (normaliser, pre-tokeniser, WordPiece), one text at a time."""
    return [len(_tokenizer().encode(t, add_special_tokens=False).ids) for t in texts]


def random_texts(alphabet: str, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200))) for _ in range(n)]


EDGES = [
    "",
    " ",
    "x" * 100,
    "x" * 101,
    "ab" * 60 + " cd",
    "supercalifragilistic " * 3,
    "__init__",
    "a_b-c.d/e",
    "qwxzjk" * 20,
    "don't",
    "U.S.A.",
    "3.14159e-10",
    "Hello\tthere\r\nfriend",
    "MiXeD CaSe WoRdS",
    "xq9zz7",
]
PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " \t\n\r"


@pytest.mark.parametrize(
    "texts",
    [
        pytest.param(random_texts(PRINTABLE, 1500, 1), id="ascii"),
        pytest.param(random_texts(string.ascii_lowercase + "   .,'", 1500, 2), id="wordy"),
        pytest.param(random_texts(PRINTABLE + "\x00\x07\x0b\x0c\x1b\x7f", 500, 3), id="control"),
        pytest.param(
            random_texts(PRINTABLE + "éüßçñ€—“”…中文字😀\u00a0\u2003\u200b", 500, 4), id="unicode"
        ),
        pytest.param(EDGES, id="edges"),
    ],
)
def test_counts_match_the_tokenizer(texts: list[str]) -> None:
    counter = TokenCounter()
    assert counter.count_many(texts) == reference(texts)
    # Asked again, from what it remembers of each word, it still agrees.
    assert [counter.count(t) for t in texts] == reference(texts)


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo not found at {LOCOMO}")
def test_counts_match_on_real_conversations() -> None:
    texts: list[str] = []
    for sample in json.loads(LOCOMO.read_text()):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [turn["text"] for turn in turns]
    assert len(texts) > 1000
    assert TokenCounter().count_many(texts) == reference(texts)
