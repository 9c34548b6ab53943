"""Webhooks end to end: the honcho-ai 2.7 SDK's HTTP client registers endpoints on a running
Mnemo (real NATS, Postgres, deriver), a real HTTP receiver in this process gets signed
``queue.empty`` and ``test.event`` deliveries, retried, dead-lettered or stopped as they should.

The SDK 2.7 has no webhook methods of its own; its HTTP client (authentication, errors) calls
the routes as the Honcho API defines them.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from honcho import Honcho
from pydantic import SecretStr

from mnemo_gateway.store import ReadStore
from mnemo_gateway.webhooks import signing
from mnemo_gateway.webhooks.drain import StatusProbe
from mnemo_runtime.pg import open_pool
from mnemo_schema.keys import KeyScope

from .conftest import MnemoProcess, wait_until

SECRET = "test-webhook-secret-" + uuid.uuid4().hex
MAX_ATTEMPTS = 3


@dataclass
class Received:
    path: str
    body: bytes
    signature: str | None

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)  # type: ignore[no-any-return]


@dataclass
class Receiver:
    """An HTTP server answering by path: ``/ok*`` 200, ``/flaky*`` 500 twice then 200,
    ``/down*`` 503 always, ``/gone*`` 404; it keeps every request."""

    port: int = 0
    got: list[Received] = field(default_factory=list)
    healed: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.got if r.path == path]

    def status_for(self, path: str) -> int:
        seen = len(self.at(path))
        if path in self.healed:
            return 200
        if path.startswith("/flaky"):
            return 500 if seen <= 2 else 200
        if path.startswith("/down"):
            return 503
        if path.startswith("/gone"):
            return 404
        return 200


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with rec.lock:
                rec.got.append(Received(self.path, raw, self.headers.get("X-Honcho-Signature")))
            self.send_response(rec.status_for(self.path))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield rec
    server.shutdown()


@pytest.fixture(scope="module")
def hooks(
    nats_url: str, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MnemoProcess]:
    """Mnemo with a webhook secret and quick retries (0.2 s, then 0.4 s; 3 attempts)."""
    env = {
        "MNEMO_WEBHOOK_SECRET": SECRET,
        "MNEMO_WEBHOOK_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
        "MNEMO_WEBHOOK_BACKOFF_BASE_S": "0.2",
        "MNEMO_WEBHOOK_TIMEOUT_S": "5",
    }
    log = tmp_path_factory.mktemp("hooks") / "mnemo.log"
    proc = MnemoProcess(nats_url, database_url, log, extra_env=env).start()
    yield proc
    proc.stop()


def sdk(proc: MnemoProcess, workspace: str, api_key: str | None = None) -> Honcho:
    return Honcho(
        base_url=proc.url, workspace_id=workspace, api_key=api_key, max_retries=0, timeout=20
    )


def register(h: Honcho, url: str) -> dict[str, Any]:
    got: dict[str, Any] = h._http.post(
        f"/v3/workspaces/{h.workspace_id}/webhooks", body={"url": url}
    )
    return got


def signed(r: Received) -> bool:
    return r.signature is not None and signing.verify(r.body, r.signature, SecretStr(SECRET))


def test_queue_empty_and_test_event_arrive_signed(hooks, receiver, workspace):
    h = sdk(hooks, workspace)
    h.get_configuration()  # the SDK's first call gets or creates the workspace
    path = f"/ok-{workspace}"
    first = register(h, receiver.url(path))
    again = register(h, receiver.url(path))
    assert again["id"] == first["id"] and first["workspace_id"] == workspace
    listed = h._http.get(f"/v3/workspaces/{workspace}/webhooks")
    assert [e["url"] for e in listed["items"]] == [receiver.url(path)] and listed["total"] == 1

    alice = h.peer("alice")
    session = h.session("s1")
    session.add_peers([alice])
    session.add_messages([alice.message("I work as a nurse at the children's hospital.")])

    def drained(session_id: str | None) -> list[Received]:
        return [
            r
            for r in receiver.at(path)
            if r.json["type"] == "queue.empty" and r.json["data"]["session_id"] == session_id
        ]

    wait_until(lambda: drained(None) and drained("s1"), timeout=60)
    status = h.queue_status()
    assert status.total_work_units >= 1 and not status.pending_work_units
    event = drained(None)[0]
    assert signed(event)
    assert event.json["data"] == {
        "workspace_id": workspace,
        "queue_type": "representation",
        "session_id": None,
        "sender_name": None,
        "observer_name": None,
    }
    # Compact JSON with sorted keys: exactly the bytes a receiver re-serialising would sign.
    assert event.body == json.dumps(event.json, separators=(",", ":"), sort_keys=True).encode()

    h._http.get(f"/v3/workspaces/{workspace}/webhooks/test")
    wait_until(lambda: any(r.json["type"] == "test.event" for r in receiver.at(path)))
    test_event = next(r for r in receiver.at(path) if r.json["type"] == "test.event")
    assert signed(test_event) and test_event.json["data"] == {"workspace_id": workspace}
    assert not signed(Received(path, test_event.body + b" ", test_event.signature))


def _delivery(database_url: str, workspace: str, url: str) -> dict[str, Any] | None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT status, attempts, last_error, last_status_code, latency_ms"
            " FROM webhook_deliveries WHERE workspace = %s AND url = %s",
            (workspace, url),
        ).fetchone()
    if row is None:
        return None
    return dict(zip(("status", "attempts", "error", "code", "latency_ms"), row, strict=True))


def test_retries_then_dead_letters_and_delete_stops(hooks, receiver, workspace, database_url):
    h = sdk(hooks, workspace)
    h.get_configuration()
    flaky, down, gone = f"/flaky-{workspace}", f"/down-{workspace}", f"/gone-{workspace}"
    dropped, kept = f"/ok-dropped-{workspace}", f"/ok-kept-{workspace}"
    for p in (flaky, down, gone, dropped, kept):
        register(h, receiver.url(p))
    doomed = next(
        e
        for e in h._http.get(f"/v3/workspaces/{workspace}/webhooks")["items"]
        if e["url"] == receiver.url(dropped)
    )
    h._http.delete(f"/v3/workspaces/{workspace}/webhooks/{doomed['id']}")
    h._http.get(f"/v3/workspaces/{workspace}/webhooks/test")

    def settled(path: str, status: str) -> bool:
        got = _delivery(database_url, workspace, receiver.url(path))
        return got is not None and got["status"] == status

    wait_until(
        lambda: (
            settled(flaky, "delivered")
            and settled(down, "failed")
            and settled(gone, "failed")
            and settled(kept, "delivered")
        ),
        timeout=30,
    )
    assert len(receiver.at(flaky)) == 3  # 500, 500, then 200
    assert all(signed(r) for r in receiver.at(flaky))
    assert _delivery(database_url, workspace, receiver.url(flaky))["attempts"] == 3  # type: ignore[index]
    assert len(receiver.at(down)) == MAX_ATTEMPTS  # 503 is retried, up to the bound
    assert len(receiver.at(gone)) == 1  # 404 is not
    failed = _delivery(database_url, workspace, receiver.url(down))
    assert failed is not None and failed["code"] == 503 and "503" in failed["error"]
    with psycopg.connect(database_url) as conn:
        letters = conn.execute(
            "SELECT reason, attempts FROM dead_letters WHERE stage = 'webhooks'"
            " AND workspace = %s AND status = 'open' ORDER BY attempts",
            (workspace,),
        ).fetchall()
    assert [a for _, a in letters] == [1, MAX_ATTEMPTS]
    # The deleted endpoint got nothing, though the same event reached the others.
    assert receiver.at(dropped) == []

    # A redrive (as ``mnemo dlq redrive`` asks for it) delivers once the receiver is back.
    receiver.healed.add(down)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE dead_letters SET status = 'redrive', updated_at = now()"
            " WHERE stage = 'webhooks' AND workspace = %s AND attempts = %s",
            (workspace, MAX_ATTEMPTS),
        )
    wait_until(lambda: settled(down, "delivered"), timeout=30)
    assert len(receiver.at(down)) == MAX_ATTEMPTS + 1

    # Deleting the workspace removes its endpoints.
    h._http.delete(f"/v3/workspaces/{workspace}")
    with psycopg.connect(database_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM webhook_endpoints WHERE workspace = %s", (workspace,)
        ).fetchone()
    assert left == (0,)


def test_bad_urls_limit_and_keys(hooks, keys, workspace):
    h = sdk(hooks, workspace)
    h.get_configuration()
    route = f"{hooks.url}/v3/workspaces/{workspace}/webhooks"
    for url in ("ftp://example.com/x", "not a url", "http://169.254.169.254/latest", ""):
        r = httpx.post(route, json={"url": url}, headers=hooks.headers)
        assert r.status_code == 422 and r.json()["field"] == "url", (url, r.text)
    for n in range(10):
        register(h, f"https://example.com/hook/{n}")
    r = httpx.post(route, json={"url": "https://example.com/hook/10"}, headers=hooks.headers)
    assert r.status_code == 409 and r.json()["field"] == "url"

    mine = {"Authorization": f"Bearer {keys.mint(KeyScope.WORKSPACE, workspace)}"}
    other = {"Authorization": f"Bearer {keys.mint(KeyScope.WORKSPACE, 'ws-someone-else')}"}
    peer = {"Authorization": f"Bearer {keys.mint(KeyScope.PEER, workspace, peer='alice')}"}
    calls = [
        ("POST", route, {"url": "https://example.com/hook/0"}),
        ("GET", route, None),
        ("GET", route + "/test", None),
        ("DELETE", route + "/abc", None),
    ]
    for method, url, body in calls:
        for refused in (other, peer):
            r = httpx.request(method, url, json=body, headers=refused)
            assert r.status_code == 403, (method, url, r.text)
    assert httpx.get(route, headers=mine).json()["total"] == 10
    assert httpx.delete(route + "/abc", headers=mine).status_code == 404


def test_secret_is_not_logged(hooks):
    assert SECRET not in Path(hooks.log).read_text()


async def test_drains_are_watched_only_where_an_endpoint_listens(
    hooks, receiver, workspace, database_url
):
    h = sdk(hooks, workspace)
    h.get_configuration()
    pool = await open_pool(database_url)
    try:
        probe = StatusProbe(ReadStore(pool), lambda _: 0)
        assert not await probe.listened(workspace)
        register(h, receiver.url(f"/listens-{workspace}"))
        deadline = time.monotonic() + 20
        while not await probe.listened(workspace):
            assert time.monotonic() < deadline, "the endpoint never reached the table"
            await asyncio.sleep(0.05)
    finally:
        await pool.close()
