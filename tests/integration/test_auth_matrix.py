"""Every route with every kind of key: the status, no row of another tenant, and nothing written
by a refused request.

The routes come from the running gateway's own OpenAPI document, so a route added later is
tested too, and fails here until the policy has a rule for it. What each key may reach is stated
below on its own terms (a peer key reaches the routes under its peer, a session key those under
its session, ...), not read from the policy, so the two statements check each other.

Two workspaces hold the same peer and session ids, each with a canary of its own in its rows:
no response to a key of one may carry the other's canary.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import nats
import pytest

from mnemo_gateway.app import build_app
from mnemo_gateway.settings import GatewaySettings
from mnemo_runtime.infra import open_infra
from mnemo_schema import subjects
from mnemo_schema.keys import KEY_EVENTS, STORED_KEY_EVENTS, KeyScope

from .conftest import Keys, MnemoProcess

W = "/v3/workspaces/{workspace_id}"
PUBLIC = {"/health", "/ready", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
ADMIN_ONLY = {"/v3/keys", "/v3/keys/{key_id}", "/v3/workspaces/list"}
UNAUTHENTICATED = ("expired", "revoked", "malformed", "none")


def reaches(kind: str, method: str, template: str, body: Any, params: dict[str, str]) -> bool:
    """Whether a key of ``kind`` for workspace A (peer alice, session s1) may call it."""
    if template in PUBLIC or kind == "admin":
        return True
    if template in ADMIN_ONLY or kind in ("other workspace", *UNAUTHENTICATED):
        return False
    if kind == "workspace" or (method, template) == ("POST", "/v3/workspaces"):
        return True
    named = body.get("id") if isinstance(body, dict) else None
    if kind == "peer":
        return template.startswith(W + "/peers/{peer_id}") or (
            (method, template, named) == ("POST", W + "/peers", "alice")
        )
    assert kind == "session"
    return (
        template.startswith(W + "/sessions/{session_id}")
        or (method, template, named) == ("POST", W + "/sessions", "s1")
        or (template == W + "/queue/status" and params.get("session_id") == "s1")
    )


def _bodies(a: str, canary: str) -> dict[tuple[str, str], Any]:
    """A request body (or query) for the routes that need one to reach their own logic."""
    s = W + "/sessions/{session_id}"
    p = W + "/peers/{peer_id}"
    return {
        ("POST", "/v3/workspaces"): {"id": a},
        ("PUT", W): {"metadata": {"tag": canary}},
        ("POST", W + "/search"): {"query": "canary"},
        ("POST", W + "/schedule_dream"): {"observer": "alice"},
        ("POST", W + "/conclusions"): {
            "conclusions": [
                {"content": f"{canary} noted", "observer_id": "bob", "observed_id": "alice"}
            ]
        },
        ("POST", W + "/conclusions/query"): {"query": "canary"},
        ("POST", W + "/peers"): {"id": "alice"},
        ("PUT", p): {"metadata": {"tag": canary}},
        ("POST", p + "/chat"): {"query": "What did alice say?"},
        ("POST", p + "/search"): {"query": "canary"},
        ("PUT", p + "/card"): {"peer_card": [f"{canary} card"]},
        ("POST", W + "/sessions"): {"id": "s1"},
        ("PUT", s): {"metadata": {"tag": canary}},
        ("POST", s + "/peers"): {"carol": {}},
        ("PUT", s + "/peers"): {"alice": {}, "bob": {"observe_others": True}},
        ("DELETE", s + "/peers"): ["carol"],
        ("PUT", s + "/peers/{peer_id}/config"): {"observe_others": True},
        ("POST", s + "/search"): {"query": "canary"},
        ("POST", s + "/messages"): {"messages": [{"peer_id": "alice", "content": canary}]},
        ("PUT", s + "/messages/{message_id}"): {"metadata": {"tag": canary}},
    }


PARAMS = {
    ("POST", "/v3/keys"): {"workspace_id": "ws-minted"},
    ("GET", W + "/queue/status"): {"session_id": "s1"},
}
# Destructive operations run last, the workspace's deletion the very last.
LAST = {
    ("DELETE", W + "/sessions/{session_id}/messages/{message_id}"): 1,
    ("DELETE", W + "/peers/{peer_id}"): 1,
    ("DELETE", W + "/sessions/{session_id}"): 1,
    ("DELETE", W): 2,
}


def operations(url: str) -> list[tuple[str, str]]:
    """Every operation of the running gateway, as its OpenAPI document lists them."""
    paths = httpx.get(f"{url}/openapi.json", timeout=10).json()["paths"]
    ops = [(m.upper(), t) for t, item in paths.items() for m in item if m != "parameters"]
    ops += [("GET", t) for t in PUBLIC if t not in paths]  # the docs pages are not operations
    order = {"GET": 0, "POST": 1, "PUT": 2, "DELETE": 3}
    return sorted(ops, key=lambda op: (LAST.get(op, 0), order.get(op[0], 4), op[1]))


def _seed(url: str, admin: dict[str, str], ws: str, canary: str) -> dict[str, str]:
    """A workspace with peers alice and bob, session s1 and a message and a conclusion holding
    ``canary``; its ids."""

    def post(path: str, body: Any) -> Any:
        r = httpx.post(f"{url}{path}", json=body, headers=admin, timeout=30)
        assert r.status_code < 300, r.text
        return r.json()

    post("/v3/workspaces", {"id": ws, "metadata": {"tag": canary}})
    post(f"/v3/workspaces/{ws}/peers", {"id": "alice", "metadata": {"tag": canary}})
    post(f"/v3/workspaces/{ws}/sessions", {"id": "s1", "peers": {"alice": {}, "bob": {}}})
    (msg,) = post(
        f"/v3/workspaces/{ws}/sessions/s1/messages",
        {"messages": [{"peer_id": "alice", "content": f"I keep the {canary} in a drawer."}]},
    )
    (conclusion,) = post(
        f"/v3/workspaces/{ws}/conclusions",
        {
            "conclusions": [
                {"content": f"alice has {canary}", "observer_id": "alice", "observed_id": "alice"}
            ]
        },
    )
    return {"message_id": msg["id"], "conclusion_id": conclusion["id"]}


class Log:
    """Counts of a workspace's entity and message events in the log (what commands append)."""

    def __init__(self, nats_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.nc = self.loop.run_until_complete(nats.connect(nats_url))

    def counts(self, *workspaces: str) -> dict[str, int]:
        async def read() -> dict[str, int]:
            js = self.nc.jetstream()
            out: dict[str, int] = {}
            for ws in workspaces:
                info = await js.stream_info(subjects.STREAM, subjects_filter=f"mnemo.evt.{ws}.>")
                for subject, n in (info.state.subjects or {}).items():
                    # What commands append; not what stages add on their own time.
                    if subject.split(".")[4] in ("ent", "msg"):  # after the partition
                        out[subject] = n
            keys = await js.stream_info(subjects.STREAM, subjects_filter=STORED_KEY_EVENTS)
            out[KEY_EVENTS] = sum((keys.state.subjects or {}).values())
            return out

        return self.loop.run_until_complete(read())

    def close(self) -> None:
        self.loop.run_until_complete(self.nc.close())
        self.loop.close()


@pytest.fixture(scope="module")
def tenants(mnemo: MnemoProcess, keys: Keys) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:10]
    a, b = f"mx-a-{tag}", f"mx-b-{tag}"
    canary_a, canary_b = f"canaryA{tag}", f"canaryB{tag}"
    ids = _seed(mnemo.url, keys.headers, a, canary_a)
    _seed(mnemo.url, keys.headers, b, canary_b)
    past = datetime.now(UTC) - timedelta(minutes=1)
    revoked, claims = keys.keyring.mint(KeyScope.WORKSPACE, a)
    probe = f"{mnemo.url}/v3/workspaces/{a}/peers/list"
    assert httpx.post(probe, headers={"Authorization": f"Bearer {revoked}"}).status_code == 200
    gone = httpx.delete(f"{mnemo.url}/v3/keys/{claims.key_id}", headers=keys.headers)
    assert gone.status_code == 204, gone.text
    kinds: dict[str, str | None] = {
        "admin": keys.admin,
        "workspace": keys.mint(KeyScope.WORKSPACE, a),
        "other workspace": keys.mint(KeyScope.WORKSPACE, b),
        "peer": keys.mint(KeyScope.PEER, a, peer="alice"),
        "session": keys.mint(KeyScope.SESSION, a, session="s1"),
        "expired": keys.keyring.mint(KeyScope.WORKSPACE, a, expires_at=past)[0],
        "revoked": revoked,
        "malformed": "not.a.key",
        "none": None,
    }
    return {"a": a, "b": b, "canary_a": canary_a, "canary_b": canary_b, "ids": ids, "kinds": kinds}


def test_every_route_answers_every_key_as_its_scope_says(
    mnemo: MnemoProcess, nats_url: str, tenants: dict[str, Any]
) -> None:
    ids = {"workspace_id": tenants["a"], "peer_id": "alice", "session_id": "s1"}
    ids |= {"key_id": "matrix-key", **tenants["ids"]}
    log = Log(nats_url)
    ops = operations(mnemo.url)
    assert len(ops) >= 45, ops
    try:
        failures = [f for op in ops for f in _check(mnemo.url, op, _Ids(ids), tenants, log)]
    finally:
        log.close()
    assert not failures, "\n".join(failures)


def _check(
    url: str, op: tuple[str, str], ids: dict[str, str], t: dict[str, Any], log: Log
) -> list[str]:
    """One operation with every key: the refused first, and they may write nothing."""
    method, template = op
    kinds = t["kinds"]
    body = _bodies(t["a"], t["canary_a"]).get(op, {} if method in ("POST", "PUT") else None)
    params = PARAMS.get(op, {})
    path = template.format_map(ids)
    allowed = {k: reaches(k, method, template, body, params) for k in kinds}
    failures: list[str] = []

    def send(kind: str) -> None:
        token = kinds[kind]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = httpx.request(
            method, f"{url}{path}", json=body, params=params, headers=headers, timeout=60
        )
        failures.extend(_judged(kind, method, template, r, allowed[kind], t))

    before = log.counts(t["a"], t["b"])
    for kind in [k for k in kinds if not allowed[k]]:
        send(kind)
    after = log.counts(t["a"], t["b"])
    # Appended to: an erasure still running from an earlier operation only takes events away.
    if any(n > before.get(subject, 0) for subject, n in after.items()):
        failures.append(f"{method} {template}: a refused request wrote to the log")
    for kind in [k for k in kinds if allowed[k]]:
        send(kind)
    return failures


class _Ids(dict[str, str]):
    """Path ids; a parameter of a route added later gets a placeholder."""

    def __missing__(self, key: str) -> str:
        return "x"


def _judged(
    kind: str, method: str, template: str, r: httpx.Response, allowed: bool, t: dict[str, Any]
) -> list[str]:
    where = f"{method} {template} with {kind} key: {r.status_code}"
    out = []
    if r.status_code >= 500 and template != "/ready":  # /ready may report others' trouble
        out.append(f"{where} {r.text[:200]}")
    if allowed and r.status_code in (401, 403):
        out.append(f"{where}, expected to be let in: {r.text[:200]}")
    if not allowed:
        expected = 401 if kind in UNAUTHENTICATED else 403
        if r.status_code != expected or r.json().get("field") != "authorization":
            out.append(f"{where}, expected {expected}: {r.text[:200]}")
        if expected == 401 and r.headers.get("www-authenticate") != "Bearer":
            out.append(f"{where}: no WWW-Authenticate")
    # No response to a key of one workspace carries a row of the other.
    if kind != "admin":
        foreign = t["canary_a"] if kind == "other workspace" else t["canary_b"]
        if foreign in r.text:
            out.append(f"{where}: another tenant's row came back")
    return out


@asynccontextmanager
async def gateway(nats_url: str, database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """Another gateway, in this event loop: its own connections, its own revocation set."""
    infra = await open_infra(nats_url, database_url, "another-gateway", pool_size=2)
    app = build_app(GatewaySettings(), infra.nc, infra.pool)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                yield http
    finally:
        await infra.close()


async def test_a_revoked_key_is_refused_by_every_gateway_following_the_log(
    mnemo: MnemoProcess, keys: Keys, database_url: str, nats_url: str
) -> None:
    ws = f"rv-{uuid.uuid4().hex[:8]}"
    token, claims = keys.keyring.mint(KeyScope.WORKSPACE, ws)
    headers = {"Authorization": f"Bearer {token}"}
    path = f"/v3/workspaces/{ws}/peers/list"
    async with httpx.AsyncClient(base_url=mnemo.url, timeout=30) as here:
        assert (
            await here.post("/v3/workspaces", json={"id": ws}, headers=headers)
        ).status_code == 201
        async with gateway(nats_url, database_url) as other:
            assert (await other.post(path, headers=headers)).status_code == 200
            gone = await here.delete(f"/v3/keys/{claims.key_id}", headers=keys.headers)
            assert gone.status_code == 204
            # Refused at once where it was revoked; within moments where the log is followed.
            assert (await here.post(path, headers=headers)).status_code == 401
            deadline = asyncio.get_running_loop().time() + 10
            while (r := await other.post(path, headers=headers)).status_code != 401:
                assert asyncio.get_running_loop().time() < deadline, r.text
                await asyncio.sleep(0.05)
            assert "revoked" in r.json()["detail"]
        # A gateway started afterwards reads every revocation before it answers anything.
        async with gateway(nats_url, database_url) as later:
            assert (await later.post(path, headers=headers)).status_code == 401
        # Revoking again is harmless.
        again = await here.delete(f"/v3/keys/{claims.key_id}", headers=keys.headers)
        assert again.status_code == 204


def test_minted_keys_reach_their_scope_and_bad_requests_name_the_field(
    mnemo: MnemoProcess, keys: Keys
) -> None:
    ws = f"mk-{uuid.uuid4().hex[:8]}"
    mint = f"{mnemo.url}/v3/keys"
    r = httpx.post(mint, params={"workspace_id": ws, "peer_id": "alice"}, headers=keys.headers)
    assert r.status_code == 200, r.text
    made = r.json()
    assert made["scope"] == "peer" and made["workspace_id"] == ws and made["key_id"]
    peer = {"Authorization": f"Bearer {made['key']}"}
    assert (
        httpx.post(f"{mnemo.url}/v3/workspaces", json={"id": ws}, headers=peer).status_code == 201
    )
    assert (
        httpx.post(
            f"{mnemo.url}/v3/workspaces/{ws}/peers", json={"id": "alice"}, headers=peer
        ).status_code
        == 201
    )
    assert (
        httpx.post(
            f"{mnemo.url}/v3/workspaces/{ws}/peers", json={"id": "bob"}, headers=peer
        ).status_code
        == 403
    )
    assert httpx.post(f"{mnemo.url}/v3/workspaces/{ws}/peers/list", headers=peer).status_code == 403
    # Only an admin mints, and only the keys the reference server mints.
    assert httpx.post(mint, params={"workspace_id": ws}, headers=peer).status_code == 403
    for params, field in (
        ({}, "workspace_id"),
        ({"workspace_id": ws, "peer_id": "a", "session_id": "s"}, "session_id"),
        ({"workspace_id": ws, "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"workspace_id": "bad id"}, "workspace_id"),
    ):
        r = httpx.post(mint, params=params, headers=keys.headers)
        assert (r.status_code, r.json()["field"]) == (422, field), r.text
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    r = httpx.post(mint, params={"workspace_id": ws, "expires_at": soon}, headers=keys.headers)
    assert r.status_code == 200 and r.json()["expires_at"].startswith(soon[:16])
