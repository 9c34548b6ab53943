"""Okapi BM25 over short texts, the lexical baseline (k1 = 1.5, b = 0.75)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercased alphanumeric words without stopwords."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class BM25:
    """An in-memory BM25 index of ``documents``; ``rank`` returns document indices, best first."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs = [Counter(tokenize(d)) for d in documents]
        self._lengths = [sum(d.values()) for d in self._docs]
        self._avg = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        df: Counter[str] = Counter()
        for d in self._docs:
            df.update(d.keys())
        n = len(self._docs)
        # The Lucene form of idf, always positive, so a term common to most documents still counts.
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every document for ``query``."""
        terms = [t for t in tokenize(query) if t in self._idf]
        out = []
        for doc, length in zip(self._docs, self._lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._avg) if self._avg else self.k1
            s = 0.0
            for t in terms:
                if (tf := doc.get(t, 0)) > 0:
                    s += self._idf[t] * tf * (self.k1 + 1) / (tf + norm)
            out.append(s)
        return out

    def rank(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents with a positive score, best first."""
        scores = self.scores(query)
        order = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])
        return order[:k]
