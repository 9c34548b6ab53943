"""With ingest in the gateway's process, commands go to it directly, and every answer is the one
NATS request-reply gives."""

from __future__ import annotations

from typing import Any

import httpx
import nats
import pytest

from mnemo_gateway.commands import CommandBus
from mnemo_schema import commands as c
from mnemo_schema import subjects
from mnemo_schema.errors import Refusal

from .conftest import admin_headers


async def _script(http: httpx.AsyncClient, ws: str) -> list[tuple[int, Any]]:
    """The same requests against either layout; answers without ids and times."""
    msgs = f"/v3/workspaces/{ws}/sessions/s/messages"
    one = {"messages": [{"peer_id": "ann", "content": "I keep bees.", "metadata": {"n": 1}}]}
    key = {"Idempotency-Key": "retry-1"}
    calls = [
        ("POST", "/v3/workspaces", {"id": ws}, {}),
        ("POST", f"/v3/workspaces/{ws}/sessions", {"id": "s", "peers": {"ann": {}}}, {}),
        ("POST", msgs, one, {}),
        ("POST", msgs, one, key),
        ("POST", msgs, one, key),  # the retry: no second message
        ("POST", f"/v3/workspaces/{ws}/sessions/nope/messages", one, {}),
        ("PUT", f"{msgs}/no-such-message", {"metadata": {"a": 1}}, {}),
        ("POST", f"/v3/workspaces/{ws}/peers", {"id": "ben", "metadata": {"r": 2}}, {}),
        ("POST", f"/v3/workspaces/{ws}/sessions/s/peers", {"ben": {"observe_others": True}}, {}),
        ("POST", f"{msgs}/list", {}, {}),
    ]
    out: list[tuple[int, Any]] = []
    for method, path, body, headers in calls:
        r = await http.request(method, path, json=body, headers=headers)
        out.append((r.status_code, _strip(r.json(), ws)))
    return out


def _strip(value: Any, ws: str) -> Any:
    if isinstance(value, dict):
        drop = {"id", "created_at", "uid"} if "content" in value else {"created_at", "uid"}
        return {k: _strip(v, ws) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_strip(v, ws) for v in value]
    return "<ws>" if value == ws else value


@pytest.mark.parametrize("local", [False, True], ids=["ingest-over-nats", "ingest-in-process"])
async def test_answers_are_the_same_and_only_nats_sees_commands(
    own_nats, fresh_database, write_path, local
):
    seen: list[str] = []
    watcher = await nats.connect(own_nats)

    async def note(msg: Any) -> None:
        seen.append(msg.subject)

    await watcher.subscribe(subjects.COMMAND_SUBJECTS, cb=note)
    await watcher.flush()
    try:
        async with write_path(own_nats, fresh_database, "colocated", local=local) as app:
            http = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://t", headers=admin_headers()
            )
            async with http:
                answers = await _script(http, "bees")
        await watcher.flush()
    finally:
        await watcher.close()
    statuses = [s for s, _ in answers]
    assert statuses == [201, 201, 201, 201, 201, 404, 404, 201, 200, 200], answers
    listed = answers[-1][1]
    assert listed["total"] == 2 and [m["content"] for m in listed["items"]] == ["I keep bees."] * 2
    assert answers[5][1] == {"detail": "session 'nope' not found", "field": "session_id"}
    # Commands cross NATS only when ingest is elsewhere.
    if local:
        assert seen == []
    else:
        assert len(seen) >= 8 and set(seen) == {"mnemo.cmd.bees"}, seen


async def test_the_answers_of_both_paths_are_identical(own_nats, fresh_database, write_path):
    results = {}
    for local in (False, True):
        async with write_path(own_nats, fresh_database, f"same-{local}", local=local) as app:
            http = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://t", headers=admin_headers()
            )
            async with http:
                results[local] = await _script(http, f"ws-{str(local).lower()}")
    assert results[True] == results[False]


async def test_a_failure_in_ingest_is_a_503_naming_it():
    async def broken(workspace: str, cmd: c.Command) -> c.CommandReply:
        raise ConnectionError("the log is unreachable")

    bus = CommandBus(None, None, None, local=broken)  # type: ignore[arg-type]
    with pytest.raises(Refusal) as err:
        await bus.send("w", c.EnsureWorkspace())
    assert err.value.status == 503 and "ConnectionError" in err.value.detail
