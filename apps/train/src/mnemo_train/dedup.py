"""Stage 1: exact duplicates, then near duplicates (MinHash over word shingles, LSH)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from datasketch import MinHash, MinHashLSH

from mnemo_schema.grounding import normalise
from mnemo_train.corpus import Conversation

_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = 3) -> set[bytes]:
    """Word n-grams of the normalised text."""
    words = _WORD.findall(normalise(text))
    grams = (words[i : i + n] for i in range(max(1, len(words) - n + 1)))
    return {" ".join(g).encode() for g in grams if g}


@dataclass(frozen=True)
class Duplicate:
    id: str
    of: str
    kind: str  # "exact" or "near"


def deduplicate(
    conversations: Sequence[Conversation], threshold: float = 0.8, num_perm: int = 128
) -> tuple[list[Conversation], list[Duplicate]]:
    """The first of each group of duplicates, and the others with what they duplicate.

    Exact: the same normalised text. Near: estimated Jaccard similarity of word 3-gram shingles
    at or above ``threshold`` (LSH finds the candidates; the MinHash estimate confirms).
    """
    seen: dict[str, str] = {}
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    hashes: dict[str, MinHash] = {}
    kept: list[Conversation] = []
    dropped: list[Duplicate] = []
    for c in conversations:
        digest = hashlib.sha256(normalise(c.text()).encode()).hexdigest()
        if digest in seen:
            dropped.append(Duplicate(c.id, seen[digest], "exact"))
            continue
        seen[digest] = c.id
        m = MinHash(num_perm=num_perm)
        m.update_batch(list(shingles(c.text())))
        near = [k for k in lsh.query(m) if hashes[k].jaccard(m) >= threshold]
        if near:
            dropped.append(Duplicate(c.id, sorted(near)[0], "near"))
            continue
        # Ids are unique: the pipeline refuses a repeated one when it reads the corpus.
        lsh.insert(c.id, m)
        hashes[c.id] = m
        kept.append(c)
    return kept, dropped
