"""Query vectors remembered briefly, per workspace: an agent's turn often asks get_context and
the dialectic with the same text, and a query's embedding is about a quarter of a read's CPU.

Kept per workspace, so that how fast a read answers never tells one workspace what another has
asked; keyed by a digest of the text and kept briefly, so that no query's text outlives its
reads in the process.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict

from mnemo_runtime.embeddings import Embedder, Vector


class QueryVectors:
    """Up to ``size`` query vectors (0: none), each for ``ttl_s`` seconds."""

    def __init__(self, embedder: Embedder, size: int, ttl_s: float) -> None:
        self._embedder = embedder
        self._size = size
        self._ttl_s = ttl_s
        self._kept: OrderedDict[tuple[str, bytes], tuple[float, Vector]] = OrderedDict()

    async def vector(self, ws: str, text: str) -> Vector:
        """``text``'s query vector, embedded or remembered for ``ws``."""
        if self._size == 0:
            return await self._embedder.embed_query(text)
        key = (ws, hashlib.blake2b(text.encode(), digest_size=16).digest())
        kept = self._kept.get(key)
        if kept is not None and time.monotonic() - kept[0] < self._ttl_s:
            self._kept.move_to_end(key)
            return kept[1]
        vector = await self._embedder.embed_query(text)
        vector.setflags(write=False)  # shared by the reads that ask the same
        self._kept[key] = (time.monotonic(), vector)
        self._kept.move_to_end(key)
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return vector
