"""The direct paths for posting messages and reading a session's context answer as the FastAPI
routes do, and hand FastAPI every request they would not accept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import nats
from starlette.types import Receive, Scope, Send

from mnemo_context.app import build_service
from mnemo_context.app import serve as serve_context
from mnemo_gateway.hot import HotPath
from mnemo_runtime.pg import open_pool
from mnemo_schema.keys import KeyScope

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
    """The write path, with FastAPI's share of the gateway's requests recorded; yields it, the
    recorder, and an admin client of each: through the direct path, and to FastAPI alone."""
    async with write_path(nats_url, database_url, "hot-path-test") as edge:
        fastapi = edge.app
        recorder = Recorder(fastapi)
        edge.inner = HotPath(recorder, fastapi.state.services)
        direct, routed = (
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://t", headers=admin_headers()
            )
            for app in (edge, recorder)
        )
        async with direct, routed:
            yield recorder, direct, routed


async def test_direct_and_fastapi_answers_agree(own_nats, fresh_database, write_path):
    async with stack(write_path, own_nats, fresh_database) as (recorder, direct, routed):
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


CONTEXT = "/v3/workspaces/hot-read/sessions/s/context"


async def test_direct_and_fastapi_contexts_agree(own_nats, fresh_database, write_path, keys):
    """A get_context the direct path answers is the one FastAPI's route gives, for every
    option it takes; what it does not take (the rarer options, unknown, repeated or invalid
    parameters, a key that does not reach the session) is FastAPI's to answer."""
    async with stack(write_path, own_nats, fresh_database) as (recorder, direct, routed):
        # The context service beside it, without the memory adapters (BM25 alone).
        nc = await nats.connect(own_nats)
        pool = await open_pool(fresh_database)
        served = await serve_context(nc, await build_service(pool, None))
        try:
            await direct.post("/v3/workspaces", json={"id": "hot-read"})
            await direct.post(
                "/v3/workspaces/hot-read/sessions",
                json={"id": "s", "peers": {"ann": {}, "ben": {}}},
            )
            said = [
                ("ann", "I moved to Lisbon last spring for a job in robotics."),
                ("ben", "Lisbon! Do you still sail on weekends?"),
                ("ann", "Every Saturday, weather permitting, with my sister Maria."),
                ("ben", "I have been learning the cello since January."),
            ]
            batch = {"messages": [{"peer_id": p, "content": c} for p, c in said]}
            posted = await direct.post(CONTEXT.replace("/context", "/messages"), json=batch)
            assert posted.status_code == 201
            await _until_context(direct, len(said))
            recorder.paths.clear()

            asked = [
                {},
                {"tokens": "40"},
                {"tokens": "2000", "summary": "false", "peer_target": "ann"},
                {"peer_target": "ann", "search_query": "Where does Ann sail?"},
                {
                    "peer_target": "ben",
                    "peer_perspective": "ann",
                    "search_query": "cello",
                    "search_top_k": "5",
                    "search_max_distance": "0.8",
                    "limit_to_session": "true",
                    "include_most_frequent": "yes",
                    "max_conclusions": "3",
                },
                {"peer_perspective": "ann"},  # refused by the endpoint: 422
                {"peer_target": "nobody"},  # refused by the endpoint: 404
            ]
            for params in asked:
                a = await direct.get(CONTEXT, params=params)
                b = await routed.get(CONTEXT, params=params)
                assert (a.status_code, a.json()) == (b.status_code, b.json()), params
                assert a.headers["content-type"] == b.headers["content-type"]
            assert a.status_code == 404
            assert len(recorder.paths) == len(asked)  # only the routed ones
            assert [m["content"] for m in (await direct.get(CONTEXT)).json()["messages"]] == [
                c for _, c in said
            ]

            recorder.paths.clear()
            to_fastapi = [
                "tokens=-1",
                "tokens=many",
                "tokens=10&tokens=20",
                "unknown=1",
                "peer_target=ann&sessions=s",
                "peer_target=ann&scope=s",
                "search_top_k=0",
                "peer_target=a%20b",
            ]
            for query in to_fastapi:
                a = await direct.get(f"{CONTEXT}?{query}")
                b = await routed.get(f"{CONTEXT}?{query}")
                assert (a.status_code, a.json()) == (b.status_code, b.json()), query
            assert len(recorder.paths) == 2 * len(to_fastapi)

            # A key that does not reach the session: FastAPI's refusal, on either path.
            recorder.paths.clear()
            elsewhere = keys.mint(KeyScope.SESSION, "hot-read", session="t")
            other = {"Authorization": f"Bearer {elsewhere}"}
            a = await direct.get(CONTEXT, headers=other)
            b = await routed.get(CONTEXT, headers=other)
            assert (a.status_code, a.json()) == (b.status_code, b.json())
            assert a.status_code == 403
            assert len(recorder.paths) == 2
        finally:
            for sub in served:
                await sub.unsubscribe()
            await pool.close()
            await nc.close()


async def _until_context(client: httpx.AsyncClient, messages: int) -> None:
    """Until the session's context holds ``messages`` messages (the projector has them)."""
    async with asyncio.timeout(15):
        while True:
            r = await client.get(CONTEXT)
            if r.status_code == 200 and len(r.json()["messages"]) == messages:
                return
            await asyncio.sleep(0.05)
