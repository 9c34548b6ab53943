"""Raw-message retrievers (BM25, dense MiniLM) behind the port every retriever implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mnemo_bench.bm25 import BM25
from mnemo_bench.cases import Case, Question, Turn
from mnemo_runtime.embeddings import Embedder, Vectors


@dataclass(frozen=True)
class Retrieved:
    """Message ids retrieved for a question, best first, and the tokens the result costs."""

    ids: tuple[str, ...]
    tokens: int = 0


class Retriever(Protocol):
    """Ranks a case's messages for a question."""

    name: str

    async def prepare(self, case: Case) -> None:
        """Index ``case`` (called once per case, before its questions)."""
        ...

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:
        """The ``k`` best message ids for ``question``."""
        ...


class SkipRetriever(Exception):
    """A retriever cannot run here (no server, no database); the run continues without it."""


def document(turn: Turn) -> str:
    """How a message is indexed: "speaker: text"."""
    return f"{turn.speaker}: {turn.text}"


class BM25Retriever:
    """BM25 over the raw messages, one index per case."""

    name = "bm25"

    def __init__(self, count_tokens: TokenCount | None = None) -> None:
        self._count = count_tokens
        self._index: BM25 | None = None
        self._turns: list[Turn] = []

    async def prepare(self, case: Case) -> None:
        """Build the case's index."""
        self._turns = case.turns()
        self._index = BM25([document(t) for t in self._turns])

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:  # noqa: ARG002
        """The ``k`` best-scoring messages."""
        assert self._index is not None, "prepare() first"
        hits = [self._turns[i] for i in self._index.rank(question.text, k)]
        return _retrieved(hits, self._count)


class TokenCount(Protocol):
    def count_many(self, texts: list[str]) -> list[int]: ...


def _retrieved(hits: list[Turn], count: TokenCount | None) -> Retrieved:
    tokens = sum(count.count_many([document(t) for t in hits])) if count and hits else 0
    return Retrieved(tuple(t.id for t in hits), tokens)


class DenseRetriever:
    """Cosine similarity of sentence embeddings over the raw messages."""

    name = "dense"

    def __init__(self, embedder: Embedder, count_tokens: TokenCount | None = None) -> None:
        self._embedder = embedder
        self._count = count_tokens
        self._turns: list[Turn] = []
        self._vectors: Vectors | None = None
        self._queries: dict[str, Vectors] = {}

    async def prepare(self, case: Case) -> None:
        """Embed every message and question of the case in two batched calls."""
        self._turns = case.turns()
        self._vectors = await self._embedder.embed([document(t) for t in self._turns])
        texts = [q.text for q in case.questions]
        vectors = await self._embedder.embed(texts) if texts else None
        self._queries = (
            {q.id: vectors[i : i + 1] for i, q in enumerate(case.questions)}
            if (vectors is not None)
            else {}
        )

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:  # noqa: ARG002
        """The ``k`` messages nearest the question (vectors are unit length: dot = cosine)."""
        assert self._vectors is not None, "prepare() first"
        query = self._queries.get(question.id)
        if query is None:
            query = await self._embedder.embed([question.text])
        scores = (self._vectors @ query[0]).astype(np.float64)
        order = np.argsort(-scores, kind="stable")[:k]
        return _retrieved([self._turns[int(i)] for i in order], self._count)
