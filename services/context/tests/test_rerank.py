"""The HTTP reranker's wire format (text-embeddings-inference's POST /rerank)."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import SecretStr

from mnemo_context.adapters.rerank import HttpReranker


def _server(seen: list[httpx.Request], reply: list[dict[str, float]]) -> httpx.AsyncClient:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=reply)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


async def test_scores_come_back_in_the_order_of_the_texts() -> None:
    seen: list[httpx.Request] = []
    # The server answers best first; the scores go back to the texts they belong to.
    client = _server(seen, [{"index": 1, "score": 0.9}, {"index": 0, "score": 0.2}])
    reranker = HttpReranker("http://rr:8080/", api_key=SecretStr("k"), client=client)
    assert await reranker.rerank("where?", ["a", "b"]) == [0.2, 0.9]
    (request,) = seen
    assert str(request.url) == "http://rr:8080/rerank"
    assert json.loads(request.content) == {"query": "where?", "texts": ["a", "b"]}
    assert request.headers["authorization"] == "Bearer k"
    assert await reranker.rerank("where?", []) == [] and len(seen) == 1


async def test_a_text_left_unscored_is_an_error() -> None:
    reranker = HttpReranker("http://rr", client=_server([], [{"index": 0, "score": 1.0}]))
    with pytest.raises(ValueError, match="unscored"):
        await reranker.rerank("q", ["a", "b"])
