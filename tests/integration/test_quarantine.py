"""Poison events never stall a projection: quarantined with the reason, marked on reads, reported
by /ready, redriven with ``mnemo dlq`` after a fix, and honoured again on replay."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import httpx
import nats
import psycopg
from psycopg import AsyncConnection

from mnemo_projector.quarantine import RetryPolicy
from mnemo_projector.runner import Projector
from mnemo_projector.tables import drop_projection
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.infra import open_infra
from mnemo_schema import subjects
from mnemo_schema.events import Event, MessagePosted, Representation, encode_event

from .conftest import admin_headers, wait_until


def _dlq(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemo_cli", "dlq", *args],
        env={**os.environ, "DATABASE_URL": db},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _letters(db: str) -> list[dict[str, object]]:
    out = _dlq(db, "list", "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _poison(workspace: str, content: str) -> bytes:
    """A MessagePosted as an old release (or anyone on the bus) could have put in the log."""
    event = MessagePosted.model_construct(
        event_id="p" * 32,
        schema_version=1,
        occurred_at=datetime.now(UTC),
        workspace=workspace,
        correlation_id=None,
        causation_id=None,
        trace={},
        type="MessagePosted",
        session_id="s",
        message_id="poisoned",
        peer_id="a",
        content=content,
        metadata={},
        created_at=datetime.now(UTC),
        token_count=2,
        representations=[Representation(observer="a", observed="a")],
    )
    return encode_event(event)


def _messages(url: str, workspace: str) -> list[str] | None:
    """The session's messages, or None while it is not (yet) there, as during a replay."""
    r = httpx.post(
        f"{url}/v3/workspaces/{workspace}/sessions/s/messages/list",
        json={},
        headers=admin_headers(),
    )
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def test_a_poison_event_is_quarantined_marked_redriven_and_honoured_on_replay(
    own_nats, fresh_database, spawn, tmp_path: Path, admin
):
    stack = spawn(own_nats, fresh_database).start()
    url, ws = stack.url, "poisoned"
    assert httpx.post(f"{url}/v3/workspaces", json={"id": ws}, headers=admin).status_code == 201
    r = httpx.post(
        f"{url}/v3/workspaces/{ws}/sessions", json={"id": "s", "peers": {"a": {}}}, headers=admin
    )
    assert r.status_code == 201, r.text
    # In the log already, as the report found it: a NUL that Postgres cannot hold.
    poison = _poison(ws, "hello\x00world")
    assert b"\\u0000" in poison

    async def publish() -> None:
        nc = await nats.connect(own_nats)
        await nc.jetstream().publish(subjects.message_subject(ws, "s"), poison)
        await nc.close()

    asyncio.run(publish())
    # The projection goes on: a write after it is answered and read back at once.
    r = httpx.post(
        f"{url}/v3/workspaces/{ws}/sessions/s/messages",
        json={"messages": [{"peer_id": "a", "content": "after the poison"}]},
        timeout=15,
        headers=admin,
    )
    assert r.status_code == 201 and r.elapsed.total_seconds() < 5
    assert _messages(url, ws) == ["after the poison"]

    wait_until(lambda: any(x["stage"] == "projector-pg" for x in _letters(fresh_database)))
    (letter,) = [x for x in _letters(fresh_database) if x["stage"] == "projector-pg"]
    assert letter["workspace"] == ws and letter["session_id"] == "s"
    assert "NUL" in str(letter["reason"]) and letter["status"] == "open"
    # /ready names the cause; a read that touches the session says it is incomplete.
    ready = httpx.get(f"{url}/ready", timeout=10)
    assert ready.status_code == 503
    assert "quarantined projector-pg" in ready.json()["problems"]
    assert httpx.get(f"{url}/ready", params={"scope": "serving"}).status_code == 200
    wait_until(
        lambda: (
            "projector-pg"
            in httpx.post(
                f"{url}/v3/workspaces/{ws}/sessions/s/messages/list", json={}, headers=admin
            ).headers.get("mnemo-quarantined", "")
        )
    )

    # The operator fixes the event and redrives it; the message appears in its place.
    fixed = tmp_path / "fixed.json"
    fixed.write_bytes(poison.replace(b"\\u0000", b" "))
    out = _dlq(fresh_database, "redrive", str(letter["id"]), "--event", str(fixed))
    assert out.returncode == 0, out.stdout + out.stderr
    assert _messages(url, ws) == ["hello world", "after the poison"]
    # The background stages parked the undecodable message too; they are discarded here.
    for other in _letters(fresh_database):
        assert _dlq(fresh_database, "discard", str(other["id"])).returncode == 0
    wait_until(lambda: httpx.get(f"{url}/ready", timeout=10).status_code == 200, timeout=30)

    # A replay meets the poison again and applies the correction instead, with no new letter.
    async def drop() -> None:
        conn = await AsyncConnection.connect(fresh_database, autocommit=True)
        await drop_projection(conn)
        await conn.close()

    asyncio.run(drop())
    wait_until(lambda: _messages(url, ws) == ["hello world", "after the poison"], timeout=30)
    assert _letters(fresh_database) == []


def test_a_poison_entity_event_does_not_stop_the_workspace_taking_commands(
    own_nats, fresh_database, spawn, admin
):
    stack = spawn(own_nats, fresh_database).start()

    async def publish() -> None:
        nc = await nats.connect(own_nats)
        await nc.jetstream().publish(
            subjects.entity_subject("fresh", "peer"),
            b'{"type": "PeerCreated", "workspace": "fresh", "peer_id": "p", "metadata": {"x": NaN}}',
        )
        await nc.close()

    asyncio.run(publish())
    # Ingest builds this workspace's write model from a history that holds the poison.
    assert (
        httpx.post(f"{stack.url}/v3/workspaces", json={"id": "fresh"}, headers=admin).status_code
        == 201
    )
    r = httpx.post(f"{stack.url}/v3/workspaces/fresh/peers", json={"id": "q"}, headers=admin)
    assert r.status_code == 201


class _Breaks:
    """A projection into a table of its own that fails, as a bug would, on one event."""

    name = "breaks"
    applied_subject = "mnemo.projector.breaks.applied"
    pipelined = False
    fair = False

    def __init__(self, bad_message: str) -> None:
        self.bad = bad_message
        self.tries = 0

    def filters(self, partition: int) -> list[str]:
        return [f"mnemo.evt.breaking.{partition}.>"]

    async def setup(self, conn: AsyncConnection) -> None:
        await conn.execute("CREATE TABLE IF NOT EXISTS breaks (seq bigint PRIMARY KEY, id text)")
        await conn.execute(
            "INSERT INTO projection_positions VALUES ('breaks', 0) ON CONFLICT DO NOTHING"
        )

    async def apply(self, conn: AsyncConnection, batch: Sequence[tuple[int, Event]]) -> None:
        for seq, event in batch:
            assert isinstance(event, MessagePosted)
            if event.message_id == self.bad:
                self.tries += 1
                raise KeyError(f"cannot project {self.bad}")
            await conn.execute("INSERT INTO breaks VALUES (%s, %s)", (seq, event.message_id))

    async def idle(self) -> None:
        return None

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> None:
        return None


async def test_an_event_that_keeps_failing_is_quarantined_and_the_rest_applied(
    own_nats, fresh_database
):
    infra = await open_infra(own_nats, fresh_database, "test-breaks")
    projection = _Breaks("m2")
    async with infra.pool.connection() as conn:
        await projection.setup(conn)
    projector = Projector(
        projection,
        infra.nc,
        infra.js,
        infra.pool,
        retry=RetryPolicy(3, (0.01,)),
        partition=subjects.partition_of("breaking", infra.partitions),
        partitions=infra.partitions,
    )
    await projector.setup()
    for i in range(1, 5):
        event = MessagePosted(
            workspace="breaking",
            session_id="s",
            message_id=f"m{i}",
            peer_id="a",
            content="x",
            metadata={},
            created_at=datetime.now(UTC),
            token_count=1,
        )
        await infra.js.publish(event.subject(), encode_event(event))
    try:
        applied = await asyncio.wait_for(projector.catch_up(), 30)
        with psycopg.connect(fresh_database) as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM breaks ORDER BY seq")]
            letters = conn.execute(
                "SELECT stage, reason, attempts, stream_seq FROM dead_letters"
            ).fetchall()
        assert ids == ["m1", "m3", "m4"]
        assert projection.tries == 4  # once in the batch, then three times alone
        ((stage, reason, attempts, seq),) = letters
        assert (stage, attempts) == ("projector-breaks", 3) and "cannot project m2" in reason
        assert seq < applied  # the position moved past it
    finally:
        await infra.close()


class _Resting(_Breaks):
    """A projection with nothing to apply, counting its loop's idle passes."""

    def __init__(self) -> None:
        super().__init__("none")
        self.idle_passes = 0

    async def idle(self) -> None:
        self.idle_passes += 1


async def test_an_idle_projector_looks_for_redrives_every_two_seconds_not_each_pass(
    own_nats, fresh_database, monkeypatch
):
    """Each partition's loop passes idle about twice a second; asking Postgres for letters to
    redrive on each pass made an idle process of dozens of loops ask dozens of times a
    second."""
    lookups = 0
    real = DeadLetters.redrives

    async def counted(self: DeadLetters, limit: int = 20) -> list[dict[str, object]]:
        nonlocal lookups
        lookups += 1
        return await real(self, limit)

    monkeypatch.setattr(DeadLetters, "redrives", counted)
    infra = await open_infra(own_nats, fresh_database, "test-resting")
    projection = _Resting()
    projector = Projector(projection, infra.nc, infra.js, infra.pool)
    await projector.setup()
    stop = asyncio.Event()
    task = asyncio.create_task(projector.run(stop))
    try:
        async with asyncio.timeout(15):
            while projection.idle_passes < 5:  # about 2 s of idling
                await asyncio.sleep(0.05)
                if task.done():
                    task.result()
        assert 1 <= lookups <= 2, f"{lookups} lookups in {projection.idle_passes} idle passes"
    finally:
        stop.set()
        await task
        await infra.close()
