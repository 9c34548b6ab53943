"""Stage 3: drop conversations that overlap the benchmark corpora (word n-gram overlap).

The benchmarks Mnemo is measured on (LoCoMo, BEAM, LongMemEval where present) are read from
the datasets folder; every word n-gram of every message is indexed. A corpus conversation
sharing at least ``min_shared`` of them with one benchmark conversation is dropped, with the
benchmark, the conversation it overlaps and the count as its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mnemo_bench.cases import Case
from mnemo_bench.readers import read_beam, read_locomo, read_longmemeval
from mnemo_schema.grounding import normalise
from mnemo_train.corpus import Conversation

_WORD = re.compile(r"\w+")
N = 13
MIN_SHARED = 2


def ngrams(text: str, n: int = N) -> set[int]:
    """Hashes of the word n-grams of one message (normalised)."""
    words = _WORD.findall(normalise(text))
    return {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}


def benchmark_cases(root: Path) -> list[tuple[str, Case]]:
    """(benchmark, case) for every benchmark conversation found under ``root``."""
    found: list[tuple[str, Case]] = []
    for path in sorted((root / "locomo").glob("*.json")):
        found += [("locomo", c) for c in read_locomo(path)]
    for folder in sorted(root.glob("beam-*")):
        found += [("beam", c) for c in read_beam(folder)]
    for path in sorted((root / "longmemeval").glob("*.json")):
        found += [("longmemeval", c) for c in read_longmemeval(path)]
    return found


@dataclass(frozen=True)
class Contaminated:
    id: str
    benchmark: str
    source: str
    shared: int


class BenchmarkIndex:
    """n-gram hash -> the benchmark conversations it occurs in."""

    def __init__(self, cases: Iterable[tuple[str, Case]], n: int = N) -> None:
        self.n = n
        self._names: list[tuple[str, str]] = []
        self._index: dict[int, int | set[int]] = {}
        for benchmark, case in cases:
            slot = len(self._names)
            self._names.append((benchmark, case.id))
            for turn in case.turns():
                for g in ngrams(turn.text, n):
                    have = self._index.get(g)
                    if have is None:
                        self._index[g] = slot
                    elif isinstance(have, int) and have != slot:
                        self._index[g] = {have, slot}
                    elif isinstance(have, set):
                        have.add(slot)

    @property
    def sources(self) -> list[tuple[str, str]]:
        return list(self._names)

    def overlap(self, conversation: Conversation) -> tuple[str, str, int] | None:
        """The benchmark conversation sharing the most n-grams with ``conversation``, if any."""
        shared: Counter[int] = Counter()
        grams = set().union(*(ngrams(m.text, self.n) for m in conversation.messages))
        for g in grams:
            hit = self._index.get(g)
            if hit is not None:
                shared.update([hit] if isinstance(hit, int) else hit)
        if not shared:
            return None
        slot, count = shared.most_common(1)[0]
        return (*self._names[slot], count)


def decontaminate(
    conversations: Sequence[Conversation], index: BenchmarkIndex, min_shared: int = MIN_SHARED
) -> tuple[list[Conversation], list[Contaminated]]:
    """The conversations clear of the benchmarks, and those dropped with why."""
    kept: list[Conversation] = []
    dropped: list[Contaminated] = []
    for c in conversations:
        hit = index.overlap(c)
        if hit is not None and hit[2] >= min_shared:
            dropped.append(Contaminated(c.id, *hit))
        else:
            kept.append(c)
    return kept, dropped
