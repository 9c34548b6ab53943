"""The gRPC gateway's figures, taken beside HTTP's: bulk streaming ingest, single-message latency,
get_context latency (each against the same stack, over loopback)."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
from mnemo.v1 import context_pb2 as xp
from mnemo.v1 import context_pb2_grpc as xg
from mnemo.v1 import messages_pb2 as mp
from mnemo.v1 import messages_pb2_grpc as mg
from mnemo.v1 import resources_pb2 as rp
from mnemo.v1 import sessions_pb2 as sp
from mnemo.v1 import sessions_pb2_grpc as sg
from mnemo.v1 import workspaces_pb2 as wp
from mnemo.v1 import workspaces_pb2_grpc as wg

SENTENCE = "I moved to Lisbon last spring and I have been learning Portuguese since."
CONTEXT_MESSAGES = 200
# Batches a streaming client has sent and not yet had answered.
WINDOW = 2


def _quantiles(lat: list[float]) -> dict[str, float]:
    lat.sort()
    q = statistics.quantiles(lat, n=100)
    return {"requests": len(lat), "p50_ms": q[49], "p99_ms": q[98], "max_ms": lat[-1]}


async def _sessions(channel: grpc.aio.Channel, clients: int) -> str:
    ws = f"bench-grpc-{uuid.uuid4().hex[:8]}"
    await wg.WorkspaceServiceStub(channel).GetOrCreateWorkspace(
        wp.GetOrCreateWorkspaceRequest(workspace_id=ws)
    )
    sessions = sg.SessionServiceStub(channel)
    for i in range(clients):
        await sessions.GetOrCreateSession(
            sp.GetOrCreateSessionRequest(
                parent=f"workspaces/{ws}",
                session_id=f"s{i}",
                peers={
                    "user": rp.SessionPeerConfig(),
                    "assistant": rp.SessionPeerConfig(observe_others=True),
                },
            )
        )
    return ws


async def _latency(channel: grpc.aio.Channel, clients: int, seconds: float) -> dict[str, float]:
    ws = await _sessions(channel, clients)
    stub = mg.MessageServiceStub(channel)
    lat: list[float] = []
    deadline = time.monotonic() + seconds

    async def client(i: int) -> None:
        request = mp.CreateMessagesRequest(
            parent=f"workspaces/{ws}/sessions/s{i}",
            messages=[mp.NewMessage(peer_id="user", content=SENTENCE)],
        )
        while time.monotonic() < deadline:
            t = time.perf_counter()
            await stub.CreateMessages(request)
            lat.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(client(i) for i in range(clients)))
    return _quantiles(lat)


async def _streaming(channel: grpc.aio.Channel, clients: int, seconds: float) -> dict[str, float]:
    ws = await _sessions(channel, clients)
    stub = mg.MessageServiceStub(channel)
    stored = 0
    start = time.monotonic()
    deadline = start + seconds

    async def client(i: int) -> None:
        nonlocal stored
        parent = f"workspaces/{ws}/sessions/s{i}"
        # A client keeps a few batches in flight, no more: the next is sent as one is answered.
        window = asyncio.Semaphore(WINDOW)

        async def batches() -> AsyncIterator[mp.StreamMessagesRequest]:
            n = 0
            while time.monotonic() < deadline:
                await window.acquire()
                n += 1
                yield mp.StreamMessagesRequest(
                    parent=parent,
                    request_id=f"{i}-{n}",
                    messages=[
                        mp.NewMessage(
                            peer_id="user" if j % 2 else "assistant",
                            content=f"{SENTENCE} ({n}.{j})",
                        )
                        for j in range(100)
                    ],
                )

        async for ack in stub.StreamMessages(batches()):
            stored += len(ack.message_ids)
            window.release()

    await asyncio.gather(*(client(i) for i in range(clients)))
    took = time.monotonic() - start
    return {"messages": stored, "seconds": took, "messages_per_s": stored / took}


async def _context(
    channel: grpc.aio.Channel, http_url: str, seconds: float, key: str | None
) -> dict[str, dict[str, float]]:
    """get_context (2,000 tokens, a search query) over gRPC and HTTP, in alternation."""
    ws = await _sessions(channel, 1)
    parent = f"workspaces/{ws}/sessions/s0"
    messages = mg.MessageServiceStub(channel)
    for start in range(0, CONTEXT_MESSAGES, 100):
        await messages.CreateMessages(
            mp.CreateMessagesRequest(
                parent=parent,
                messages=[
                    mp.NewMessage(peer_id="user", content=f"{SENTENCE} ({k})")
                    for k in range(start, start + 100)
                ],
            )
        )
    stub = xg.ContextServiceStub(channel)
    request = xp.GetSessionContextRequest(
        name=parent,
        tokens=2000,
        peer_target="user",
        representation=xp.RepresentationOptions(search_query="Where does the user live?"),
    )
    params: dict[str, Any] = {
        "tokens": 2000,
        "peer_target": "user",
        "search_query": "Where does the user live?",
    }
    path = f"/v3/workspaces/{ws}/sessions/s0/context"
    over: dict[str, list[float]] = {"grpc": [], "http": []}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(base_url=http_url, timeout=30, headers=headers) as http:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t = time.perf_counter()
            await stub.GetSessionContext(request)
            over["grpc"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            (await http.get(path, params=params)).raise_for_status()
            over["http"].append((time.perf_counter() - t) * 1000)
    return {k: _quantiles(v) for k, v in over.items()}


def credentials(key: str | None) -> grpc.ChannelCredentials:
    """A local channel's credentials, sending ``key`` (if any) as a bearer key with every call.

    Local credentials carry call credentials over plaintext to a loopback address only; a remote
    gateway is reached with ``grpc.ssl_channel_credentials()`` in their place.
    """
    local = grpc.local_channel_credentials()
    if key is None:
        return local
    return grpc.composite_channel_credentials(local, grpc.access_token_call_credentials(key))


async def run(
    address: str, http_url: str, clients: int, seconds: float, key: str | None = None
) -> dict[str, Any]:
    """The gRPC figures: latency, streaming throughput, get_context beside HTTP's (``key``: the
    bearer key both send)."""
    async with grpc.aio.secure_channel(address, credentials(key)) as channel:
        await channel.channel_ready()
        await _latency(channel, clients, 1.0)  # warm-up
        print("gRPC: single-message latency ...", flush=True)
        latency = await _latency(channel, clients, seconds)
        print("gRPC: bulk streaming ingest ...", flush=True)
        streaming = await _streaming(channel, clients, seconds)
        print("gRPC and HTTP: get_context in alternation ...", flush=True)
        context = await _context(channel, http_url, seconds, key)
    return {"create_latency": latency, "streaming": streaming, "context": context}


def rows(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The table rows of the gRPC figures."""
    if not result:
        return []
    lat, stream, ctx = result["create_latency"], result["streaming"], result["context"]
    return [
        (
            "gRPC bulk streaming ingest (100-msg batches, acknowledged when stored)",
            f"{stream['messages_per_s']:.0f} msg/s",
            ">= HTTP batches",
        ),
        (
            "gRPC single-message CreateMessages p50 / p99",
            f"{lat['p50_ms']:.1f} / {lat['p99_ms']:.1f} ms",
            "",
        ),
        (
            "get_context 2,000 tokens + search query, gRPC p50 / p99",
            f"{ctx['grpc']['p50_ms']:.1f} / {ctx['grpc']['p99_ms']:.1f} ms",
            "",
        ),
        (
            "get_context 2,000 tokens + search query, HTTP p50 / p99 (alternated)",
            f"{ctx['http']['p50_ms']:.1f} / {ctx['http']['p99_ms']:.1f} ms",
            "",
        ),
    ]
