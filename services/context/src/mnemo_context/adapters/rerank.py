"""A ``Reranker`` over HTTP: the ``POST /rerank`` of text-embeddings-inference (and servers
that copy it): ``{"query", "texts"}`` in, ``[{"index", "score"}, ...]`` out."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
from pydantic import BaseModel, SecretStr, TypeAdapter


class _Scored(BaseModel):
    index: int
    score: float


_REPLY = TypeAdapter(list[_Scored])


class HttpReranker:
    """Scores texts against a query with a reranking server; every text gets a score."""

    def __init__(
        self,
        url: str,
        *,
        api_key: SecretStr | None = None,
        client: httpx.AsyncClient | None = None,
        timeout_s: float = 5.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
        self._url = url.rstrip("/") + "/rerank"
        self._client = client or httpx.AsyncClient(timeout=timeout_s)
        self._headers = headers

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in order (the server answers best first, by index)."""
        if not texts:
            return []
        response = await self._client.post(
            self._url, json={"query": query, "texts": list(texts)}, headers=self._headers
        )
        response.raise_for_status()
        scores: dict[int, float] = {
            s.index: s.score for s in _REPLY.validate_json(response.content)
        }
        missing = [i for i in range(len(texts)) if i not in scores]
        if missing:
            raise ValueError(f"the reranker left {len(missing)} of {len(texts)} texts unscored")
        return [scores[i] for i in range(len(texts))]

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
