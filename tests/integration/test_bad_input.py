"""Input no store can hold is refused at the edge, over HTTP and on the bus, and nothing of it is
written; the stack keeps answering."""

from __future__ import annotations

import json
import uuid

import httpx
import nats
from honcho import Honcho

from mnemo_runtime.bus import stream_last_seq
from mnemo_schema import subjects
from mnemo_schema.ids import ID_MAX_LENGTH

from .conftest import admin_headers


def _post(url: str, path: str, body: str) -> httpx.Response:
    headers = {"content-type": "application/json", **admin_headers()}
    return httpx.post(url + path, content=body, headers=headers, timeout=15)


def test_a_nul_in_a_message_is_a_422_naming_it_and_the_stack_goes_on(mnemo, workspace):
    url = mnemo.url
    assert _post(url, "/v3/workspaces", json.dumps({"id": workspace})).status_code == 201
    r = _post(
        url,
        f"/v3/workspaces/{workspace}/sessions",
        json.dumps({"id": "s", "peers": {"a": {}}}),
    )
    assert r.status_code == 201
    # The request of the report, byte for byte: JSON's \u0000 escape.
    r = _post(
        url,
        f"/v3/workspaces/{workspace}/sessions/s/messages",
        '{"messages": [{"peer_id": "a", "content": "hello\\u0000world"}]}',
    )
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "messages.0.content"
    assert "NUL" in r.json()["detail"]
    # A lone surrogate, which JSON can escape but UTF-8 cannot encode.
    r = _post(
        url,
        f"/v3/workspaces/{workspace}/sessions/s/messages",
        '{"messages": [{"peer_id": "a", "content": "ok"}, {"peer_id": "a", "content": "x\\ud800"}]}',
    )
    assert r.status_code == 422
    assert r.json()["field"] == "messages.1.content"
    # Nothing of the refused batches was written; later writes are answered at once.
    listed = _post(url, f"/v3/workspaces/{workspace}/sessions/s/messages/list", "{}")
    assert listed.json()["items"] == []
    after = _post(url, "/v3/workspaces", json.dumps({"id": f"{workspace}-after"}))
    assert after.status_code == 201
    assert after.elapsed.total_seconds() < 5
    assert httpx.get(url + "/ready", timeout=5).status_code == 200


def test_metadata_no_store_can_hold_is_refused_with_its_path(mnemo, workspace):
    url = mnemo.url
    cases = {
        # Python's JSON parser (FastAPI's) reads NaN and Infinity; Postgres's jsonb does not.
        '{"id": "%s", "metadata": {"score": NaN}}': "metadata.score",
        '{"id": "%s", "metadata": {"a": [1, {"b": Infinity}]}}': "metadata.a.1.b",
        '{"id": "%s", "metadata": {"big": 99999999999999999999}}': "metadata.big",
        '{"id": "%s", "metadata": {"k\\u0000": 1}}': "metadata.k\x00",
        '{"id": "%s", "metadata": {"t": "bad\\u0000"}}': "metadata.t",
    }
    for body, field in cases.items():
        r = _post(url, "/v3/workspaces", body % workspace)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["field"] == field
    deep = {"id": workspace, "metadata": {}}
    node = deep["metadata"]
    for _ in range(12):
        node["d"] = {}
        node = node["d"]
    r = _post(url, "/v3/workspaces", json.dumps(deep))
    assert r.status_code == 422
    assert "nested deeper than 10 levels" in r.json()["detail"]
    # None of them created the workspace.
    r = _post(url, f"/v3/workspaces/{workspace}/peers/list", "{}")
    assert r.status_code == 404


def test_ids_outside_the_alphabet_are_refused_in_paths_queries_and_bodies(mnemo, workspace, admin):
    url = mnemo.url
    assert _post(url, "/v3/workspaces", json.dumps({"id": workspace})).status_code == 201
    for path, field in (
        ("/v3/workspaces/a.b/peers/list", "workspace_id"),
        ("/v3/workspaces/a%00b/peers/list", "workspace_id"),
        (f"/v3/workspaces/{workspace}/peers/x%20y/sessions", "peer_id"),
        (
            f"/v3/workspaces/{workspace}/sessions/{'s' * (ID_MAX_LENGTH + 1)}/messages/list",
            "session_id",
        ),
    ):
        r = _post(url, path, "{}")
        assert r.status_code == 422, (path, r.text)
        assert r.json()["field"] == field
    r = _post(url, f"/v3/workspaces/{workspace}/peers", json.dumps({"id": "has space"}))
    assert r.status_code == 422
    assert r.json()["field"] == "id"
    r = httpx.get(
        f"{url}/v3/workspaces/{workspace}/queue/status",
        params={"observer_id": "a*b"},
        timeout=5,
        headers=admin,
    )
    assert r.status_code == 422
    assert r.json()["field"] == "observer_id"
    r = _post(url, f"/v3/workspaces/{workspace}/search", '{"query": "x\\u0000"}')
    assert r.status_code == 422
    assert r.json()["field"] == "query"
    r = _post(url, f"/v3/workspaces/{workspace}/peers/list", '{"filters": {"id": "a\\u0000"}}')
    assert r.status_code == 422
    assert r.json()["field"] == "filters.id"


async def test_a_poison_command_on_the_bus_is_refused_and_nothing_is_appended(mnemo, workspace):
    nc = await nats.connect(mnemo.nats_url)
    try:
        js = nc.jetstream()
        ok = await nc.request(
            subjects.command_subject(workspace), b'{"kind": "ensure_workspace"}', timeout=10
        )
        assert json.loads(ok.data)["ok"]
        before = await stream_last_seq(js)
        poison = {
            "kind": "post_messages",
            "session_id": "s",
            "messages": [{"peer_id": "a", "content": "hello\u0000world"}],
        }
        reply = json.loads(
            (
                await nc.request(
                    subjects.command_subject(workspace), json.dumps(poison).encode(), 10
                )
            ).data
        )
        assert reply["ok"] is False
        assert reply["error"]["status"] == 422
        assert reply["error"]["field"] == "messages.0.content"
        for raw in (
            b'{"kind": "ensure_peer", "peer_id": "p", "metadata": {"x": NaN}}',
            b'{"kind": "ensure_peer", "peer_id": "p", "correlation_id": "c\\u0000"}',
        ):
            reply = json.loads(
                (await nc.request(subjects.command_subject(workspace), raw, 10)).data
            )
            assert reply["ok"] is False, raw
            assert reply["error"]["status"] == 422
        assert await stream_last_seq(js) == before
    finally:
        await nc.close()


def test_ids_of_512_characters_go_all_the_way(settle, mnemo):
    """The SDK allows ids up to 512 characters; they are subject tokens on the bus."""
    ws, peer, session = "w" * 500 + uuid.uuid4().hex[:12], "p" * ID_MAX_LENGTH, "s" * ID_MAX_LENGTH
    assert len(ws) == ID_MAX_LENGTH
    h = Honcho(base_url=mnemo.url, workspace_id=ws, max_retries=0, timeout=30)
    alice = h.peer(peer)
    s = h.session(session, peers=[alice])
    s.add_messages([alice.message("I work as a nurse in Lisbon.")])
    assert [m.content for m in s.messages()] == ["I work as a nurse in Lisbon."]
    settle(h)
    assert alice.conclusions.list().items


def test_a_blank_query_is_a_422_naming_it_wherever_a_search_is_asked(mnemo, workspace, admin):
    url = mnemo.url
    ws = f"/v3/workspaces/{workspace}"
    assert _post(url, "/v3/workspaces", json.dumps({"id": workspace})).status_code == 201
    assert _post(url, f"{ws}/peers", json.dumps({"id": "ann"})).status_code in (200, 201)
    assert _post(url, f"{ws}/sessions", json.dumps({"id": "s"})).status_code in (200, 201)
    scoped = {"filters": {"observer_id": "ann", "observed_id": "ann"}}
    # ASCII and Unicode whitespace alike (U+00A0 no-break space, U+2003 em space).
    for blank in (" ", "\u00a0", "\u2003\n\t"):
        for path, body in (
            (f"{ws}/search", {"query": blank}),
            (f"{ws}/sessions/s/search", {"query": blank}),
            (f"{ws}/peers/ann/search", {"query": blank, "limit": 5}),
            (f"{ws}/conclusions/query", {"query": blank, **scoped}),
        ):
            r = _post(url, path, json.dumps(body))
            assert r.status_code == 422, (path, repr(blank), r.text)
            assert r.json()["field"] == "query", r.text
        r = httpx.get(
            f"{url}{ws}/sessions/s/context",
            params={"peer_target": "ann", "search_query": blank},
            headers=admin,
            timeout=15,
        )
        assert r.status_code == 422, r.text
        assert r.json()["field"] == "search_query"
    # A real query still answers.
    assert _post(url, f"{ws}/peers/ann/search", '{"query": "nurse"}').status_code == 200
