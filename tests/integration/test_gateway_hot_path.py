"""The direct path for posting messages answers as the FastAPI route does, and hands FastAPI
every request it would not accept."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

from mnemo_gateway.hot import HotPath

from .conftest import admin_headers

MESSAGES = "/v3/workspaces/hot/sessions/s/messages"


class Recorder:
    """Passes requests on to FastAPI and notes which reached it."""

    def __init__(self, app: object) -> None:
        self.app = app
        self.paths: list[tuple[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)  # type: ignore[operator]


@asynccontextmanager
async def stack(write_path: Any, nats_url: str, database_url: str) -> AsyncIterator[Any]:
    """The write path, with FastAPI's share of the gateway's requests recorded."""
    async with write_path(nats_url, database_url, "hot-path-test") as edge:
        fastapi = edge.app
        recorder = Recorder(fastapi)
        edge.inner = HotPath(recorder, fastapi.state.services)
        yield edge, recorder


async def test_direct_and_fastapi_answers_agree(own_nats, fresh_database, write_path):
    async with stack(write_path, own_nats, fresh_database) as (edge, recorder):
        direct = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=edge), base_url="http://t", headers=admin_headers()
        )
        routed = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=recorder),
            base_url="http://t",
            headers=admin_headers(),
        )
        async with direct, routed:
            assert (await direct.post("/v3/workspaces", json={"id": "hot"})).status_code == 201
            r = await direct.post("/v3/workspaces/hot/sessions", json={"id": "s"})
            assert r.status_code == 201
            recorder.paths.clear()

            # Accepted batches never reach FastAPI, and read back as FastAPI's own route wrote.
            batch = {
                "messages": [
                    {"peer_id": "ann", "content": "hi", "metadata": {"k": 1}},
                    {"peer_id": "ben", "content": "hello"},
                ]
            }
            a = await direct.post(MESSAGES, json=batch)
            b = await routed.post(MESSAGES, json=batch)
            assert recorder.paths == [("POST", MESSAGES)]  # only the routed one
            assert a.status_code == b.status_code == 201
            assert a.headers["content-type"] == b.headers["content-type"]
            strip = {"id", "created_at"}
            assert [{k: v for k, v in m.items() if k not in strip} for m in a.json()] == [
                {k: v for k, v in m.items() if k not in strip} for m in b.json()
            ]
            listed = await direct.post(f"{MESSAGES}/list", json={})
            ids = [m["id"] for m in listed.json()["items"]]
            assert ids == [m["id"] for m in a.json()] + [m["id"] for m in b.json()]

            # The same Idempotency-Key on both paths is one write.
            key = {"Idempotency-Key": "retry-1"}
            first = await direct.post(MESSAGES, json=batch, headers=key)
            again = await routed.post(MESSAGES, json=batch, headers=key)
            assert [m["id"] for m in first.json()] == [m["id"] for m in again.json()]

            # Refusals raised by the endpoint have FastAPI's shape.
            missing = "/v3/workspaces/hot/sessions/nope/messages"
            a, b = await direct.post(missing, json=batch), await routed.post(missing, json=batch)
            assert (a.status_code, a.json()) == (b.status_code, b.json())
            assert a.status_code == 404

            # What the route would not accept goes to FastAPI, body and all.
            recorder.paths.clear()
            refused = [
                {"json": {"messages": []}},
                {"json": {"messages": [{"peer_id": "ann"}]}},
                {"json": {"messages": [{"peer_id": "ann", "content": "x"}] * 101}},
                {"content": b"{not json", "headers": {"content-type": "application/json"}},
                {"content": b'{"messages": []}', "headers": {"content-type": "text/plain"}},
                {"json": batch, "headers": {"Idempotency-Key": "k" * 256}},
            ]
            for request in refused:
                a = await direct.post(MESSAGES, **request)  # type: ignore[arg-type]
                b = await routed.post(MESSAGES, **request)  # type: ignore[arg-type]
                assert (a.status_code, a.json()) == (b.status_code, b.json())
                assert a.status_code in (413, 422), a.json()
                assert "field" in a.json()
            assert len(recorder.paths) == 2 * len(refused)

            # A payload with a text/plain content type that happens to be valid is FastAPI's too.
            r = await direct.post(
                MESSAGES,
                content=b'{"messages": [{"peer_id": "a", "content": "x"}]}',
                headers={"content-type": "text/plain"},
            )
            assert r.status_code == 422
