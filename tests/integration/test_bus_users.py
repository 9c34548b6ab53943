"""On the bus, an agent's NATS user reaches its own workspace only: it may send that workspace's
commands and get their replies, and nothing of another workspace, nor the log itself."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from nats.errors import Error as NatsError

from mnemo_runtime.nats_users import NatsUser
from mnemo_runtime.stack import LocalNats, free_port
from mnemo_schema import subjects

from .conftest import admin_headers

ENSURE = json.dumps({"kind": "ensure_workspace"}).encode()


async def _until(predicate: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def _said(errors: list[str], violation: str) -> bool:
    """Whether the server reported ``violation`` (the client lower-cases its errors)."""
    return any(f"permissions violation for {violation.lower()}" in e for e in errors)


async def _connect(user: NatsUser, port: int, errors: list[str]) -> nats.NATS:
    async def noted(err: Exception) -> None:
        errors.append(str(err).lower())

    # The server takes a new user on its configuration reload, a moment after it is made.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        try:
            return await nats.connect(
                user.url("127.0.0.1", port),
                inbox_prefix=user.inbox_prefix or "_INBOX",
                error_cb=noted,
                allow_reconnect=False,
                max_reconnect_attempts=0,
            )
        except Exception:
            assert loop.time() < deadline, "the server never accepted the new user"
            await asyncio.sleep(0.05)


async def test_an_agent_of_one_workspace_cannot_reach_another(
    tmp_path: Path, fresh_database: str, write_path: Any
) -> None:
    server = LocalNats(tmp_path / "nats", free_port())
    url = server.start()
    try:
        async with write_path(url, fresh_database, "bus-users") as app:
            agent = server.agent("ws-a")
            errors: list[str] = []
            nc = await _connect(agent, server.port, errors)
            try:
                await _its_own_workspace_and_nothing_else(nc, errors, app)
            finally:
                await nc.close()
            # A request naming an event subject of the log as its reply gets no answer there.
            service = await nats.connect(url)
            try:
                await _no_reply_outside_an_inbox(service, agent, server.port)
            finally:
                await service.close()
        for bad in (f"nats://{agent.user}:wrong@127.0.0.1:{server.port}", server.address):
            with pytest.raises(NatsError):
                await nats.connect(bad, allow_reconnect=False, max_reconnect_attempts=0)
    finally:
        server.stop()


async def _its_own_workspace_and_nothing_else(nc: nats.NATS, errors: list[str], app: Any) -> None:
    reply = json.loads((await nc.request(subjects.command_subject("ws-a"), ENSURE, 10)).data)
    assert reply["ok"], reply
    post = {"kind": "post_messages", "session_id": "s", "messages": []}
    refused = json.loads(
        (await nc.request(subjects.command_subject("ws-a"), json.dumps(post).encode(), 10)).data
    )
    assert refused["error"]["field"] == "messages"  # ingest's own refusal: the agent was heard

    # Another workspace's commands and queries: refused by the server, and nothing happens.
    for subject in (subjects.command_subject("ws-b"), subjects.query_subject("ws-b", "context")):
        await nc.publish(subject, ENSURE)
        await nc.flush()
        await _until(lambda s=subject: _said(errors, f'publish to "{s}"'))
    # Nor may it listen to another workspace's replies, the commands of others, or the log.
    for subject in ("_INBOX.ws-b.>", "mnemo.cmd.>", "mnemo.evt.>", "_INBOX.>"):
        await nc.subscribe(subject)
        await nc.flush()
        await _until(lambda s=subject: _said(errors, f'subscription to "{s}"'))
    # The JetStream API is out of its reach: it cannot read the log.
    with pytest.raises((NatsError, TimeoutError)):
        await nc.jetstream(timeout=1).stream_info(subjects.STREAM)
    await _until(lambda: _said(errors, f'publish to "$JS.API.STREAM.INFO.{subjects.STREAM}"'))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t", headers=admin_headers()
    ) as http:
        assert (await http.post("/v3/workspaces/ws-a/peers/list")).status_code == 200
        assert (await http.post("/v3/workspaces/ws-b/peers/list")).status_code == 404


async def _no_reply_outside_an_inbox(service: nats.NATS, agent: NatsUser, port: int) -> None:
    errors: list[str] = []
    nc = await _connect(agent, port, errors)
    target = subjects.message_subject("ws-a", "s")
    seen: list[bytes] = []

    async def note(msg: Any) -> None:
        seen.append(msg.data)

    sub = await service.subscribe(target, cb=note)
    try:
        await nc.publish(subjects.command_subject("ws-a"), ENSURE, reply=target)
        # Ingest answers a request it can reply to, so once this is answered, the other was seen.
        assert json.loads((await nc.request(subjects.command_subject("ws-a"), ENSURE, 10)).data)[
            "ok"
        ]
        await service.flush()
        assert seen == []
        info = await service.jetstream().stream_info(subjects.STREAM, subjects_filter=target)
        assert not info.state.subjects
    finally:
        await sub.unsubscribe()
        await nc.close()
