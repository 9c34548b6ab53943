"""Embeddings from any server speaking the OpenAI ``POST /embeddings`` protocol."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np
from pydantic import SecretStr

from mnemo_runtime.embeddings.ports import (
    EmbeddingError,
    Vector,
    Vectors,
    empty_vectors,
    l2_normalise,
)

# 429 is rate limiting; 5xx covers overloaded or restarting servers. Other 4xx will fail the
# same way again, so they are raised at once.
_RETRYABLE = frozenset({429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 60.0

Sleep = Callable[[float], Awaitable[None]]


class OpenAICompatEmbedder:
    """Embeddings over HTTP (OpenAI, vLLM, Ollama, TEI, LiteLLM ...), batched and retried.

    The dimension is declared, not discovered, because stores size their collections before
    the first request; a server answering with another length is an error, not a surprise.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimension: int,
        api_key: SecretStr | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        batch_size: int = 128,
        send_dimensions: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if batch_size < 1 or dimension < 1 or max_retries < 0:
            raise ValueError("batch_size and dimension must be positive, max_retries >= 0")
        self._model = model
        self._dimension = dimension
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._batch_size = batch_size
        # Models such as text-embedding-3-* can shorten their output on request.
        self._send_dimensions = send_dimensions
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
        )

    @property
    def model_name(self) -> str:
        """Model id sent to the server and recorded beside vectors."""
        return self._model

    @property
    def dimension(self) -> int:
        """Declared vector length; responses are checked against it."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in order, one request per batch, normalising whatever the server sends."""
        if not texts:
            return empty_vectors(self._dimension)
        parts = [
            await self._embed_batch(list(texts[start : start + self._batch_size]))
            for start in range(0, len(texts), self._batch_size)
        ]
        return l2_normalise(np.concatenate(parts))

    async def embed_query(self, text: str) -> Vector:
        """The text's row of ``embed``."""
        vectors = await self.embed([text])
        vector: Vector = vectors[0]
        return vector

    async def aclose(self) -> None:
        """Close the underlying connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> OpenAICompatEmbedder:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _embed_batch(self, batch: list[str]) -> Vectors:
        payload: dict[str, Any] = {"model": self._model, "input": batch}
        if self._send_dimensions:
            payload["dimensions"] = self._dimension
        response = await self._post_with_retries(payload)
        return self._parse(response, len(batch))

    async def _post_with_retries(self, payload: dict[str, Any]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._client.post("embeddings", json=payload)
            except httpx.TransportError as exc:
                if attempt >= self._max_retries:
                    raise EmbeddingError(f"embedding request failed: {exc!r}") from exc
                delay = self._backoff(attempt)
            else:
                if response.status_code < 400:
                    return response
                if response.status_code not in _RETRYABLE or attempt >= self._max_retries:
                    raise EmbeddingError(
                        f"embedding request failed with HTTP {response.status_code}: "
                        f"{response.text[:500]}"
                    )
                retry_after = _retry_after(response)
                delay = self._backoff(attempt) if retry_after is None else retry_after
            attempt += 1
            await self._sleep(delay)

    def _backoff(self, attempt: int) -> float:
        # Full jitter, so clients throttled together do not retry together.
        return float(random.uniform(0.0, self._backoff_s * 2**attempt))

    def _parse(self, response: httpx.Response, expected: int) -> Vectors:
        try:
            items = sorted(response.json()["data"], key=lambda item: int(item["index"]))
            vectors = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"malformed embeddings response: {exc!r}") from exc
        if vectors.shape != (expected, self._dimension):
            raise EmbeddingError(
                f"expected {expected} vectors of {self._dimension}, got shape {vectors.shape}"
            )
        return vectors


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait, capped, if it said so in a form we read."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER_S)
    except ValueError:
        return None
