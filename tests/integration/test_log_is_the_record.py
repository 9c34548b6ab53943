"""The event log is the system of record: projections rebuild from it and survive a SIGKILL."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import nats
import psycopg

from mnemo_projector.tables import drop_projection
from mnemo_schema import subjects
from mnemo_schema.commands import CommandReply


def snapshot(database_url: str, workspace: str) -> dict[str, list[tuple[object, ...]]]:
    """Every read-model row of one workspace, in a stable order."""
    queries = {
        "workspaces": "SELECT id, uid, metadata, configuration FROM workspaces WHERE id = %s",
        "peers": "SELECT id, uid, metadata, configuration FROM peers WHERE workspace = %s ORDER BY id",
        "sessions": "SELECT id, uid, metadata, is_active FROM sessions WHERE workspace = %s ORDER BY id",
        "members": "SELECT session_id, peer_id, observe_me, observe_others FROM session_peers"
        " WHERE workspace = %s ORDER BY session_id, peer_id",
        "messages": "SELECT id, session_id, seq, peer_id, content, metadata, token_count,"
        " created_at, representations FROM messages WHERE workspace = %s ORDER BY seq",
    }
    with psycopg.connect(database_url) as conn:
        return {k: conn.execute(q, (workspace,)).fetchall() for k, q in queries.items()}


def storage(database_url: str, table: str) -> int:
    """The file node of ``table``'s storage: emptying it (TRUNCATE) gives it a new one."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT pg_relation_filenode(%s::regclass)", (table,)).fetchone()
        assert row is not None and row[0] is not None
        return int(row[0])


def test_drop_and_replay_rebuilds_the_same_state(mnemo, workspace, database_url, until, admin):
    url = f"{mnemo.url}/v3/workspaces"
    httpx.post(
        url, json={"id": workspace, "metadata": {"k": "v"}}, headers=admin
    ).raise_for_status()
    base = f"{url}/{workspace}"
    httpx.post(
        f"{base}/sessions",
        json={"id": "s", "peers": {"a": {}, "b": {"observe_others": True}}},
        headers=admin,
    )
    for i in range(3):
        httpx.post(
            f"{base}/sessions/s/messages",
            json={"messages": [{"peer_id": "a", "content": f"hello {i}.{j}"} for j in range(50)]},
            headers=admin,
        ).raise_for_status()
    httpx.put(f"{base}/sessions/s/peers/b/config", json={"observe_others": False}, headers=admin)
    before = snapshot(database_url, workspace)
    assert len(before["messages"]) == 150

    async def drop() -> None:
        conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
        await drop_projection(conn)
        await conn.close()

    emptied_from = storage(database_url, "messages")
    asyncio.run(drop())
    # Emptied: the table's storage is new (a running projector may already be replaying into
    # it, so its rows are not a proof), and whatever it holds from here was written after.
    assert storage(database_url, "messages") != emptied_from
    # The running projector notices the reset and replays the whole log.
    until(lambda: snapshot(database_url, workspace) == before, timeout=30)


def test_sigkill_loses_no_acknowledged_message(own_nats, fresh_database, spawn, until, admin):
    db = fresh_database
    proc = spawn(own_nats, db).start()
    ws = "killtest"
    httpx.post(f"{proc.url}/v3/workspaces", json={"id": ws}, headers=admin).raise_for_status()
    httpx.post(
        f"{proc.url}/v3/workspaces/{ws}/sessions", json={"id": "s"}, headers=admin
    ).raise_for_status()
    acked: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        n = 0
        with httpx.Client(timeout=5, headers=admin) as http:
            while not stop.is_set():
                body = {"messages": [{"peer_id": "u", "content": f"m{n}-{j}"} for j in range(20)]}
                n += 1
                try:
                    r = http.post(f"{proc.url}/v3/workspaces/{ws}/sessions/s/messages", json=body)
                except httpx.HTTPError:
                    return
                if r.status_code == 201:
                    acked.extend(m["id"] for m in r.json())

    t = threading.Thread(target=writer)
    t.start()
    until(lambda: len(acked) >= 200, timeout=30)
    proc.kill()
    stop.set()
    t.join(10)
    assert len(acked) >= 200

    proc.start()  # same log, same database: the projection catches up from its stored position

    def all_there() -> bool:
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT id FROM messages WHERE workspace = %s AND id = ANY(%s)", (ws, acked)
            ).fetchall()
        return len(rows) == len(acked)

    until(all_there, timeout=30)


def test_an_agent_can_publish_commands_on_the_bus_without_mnemo_code(
    mnemo, nats_url, workspace, database_url, until
):
    async def go() -> list[dict[str, object]]:
        nc = await nats.connect(nats_url)
        replies = []
        for cmd in (
            {"kind": "ensure_workspace"},
            {"kind": "ensure_session", "session_id": "bus", "peers": {"agent": {}}},
            {
                "kind": "post_messages",
                "session_id": "bus",
                "messages": [{"peer_id": "agent", "content": "Posted from the bus."}],
            },
            {"kind": "post_messages", "session_id": "bus", "messages": [{"peer_id": "agent"}]},
        ):
            msg = await nc.request(
                subjects.command_subject(workspace), json.dumps(cmd).encode(), 10
            )
            replies.append(json.loads(msg.data))
        await nc.close()
        return replies

    replies = asyncio.run(go())
    assert [r["ok"] for r in replies] == [True, True, True, False]
    assert replies[3]["error"]["status"] == 422
    assert replies[3]["error"]["field"] == "messages.0.content"
    message_id = CommandReply.model_validate(replies[2]).message_ids[0]

    def projected() -> bool:
        with psycopg.connect(database_url) as conn:
            return (
                conn.execute("SELECT 1 FROM messages WHERE id = %s", (message_id,)).fetchone()
                is not None
            )

    until(projected)


def test_an_undecodable_event_is_parked_and_the_stages_go_on(
    mnemo, nats_url, database_url, workspace, until, admin
):
    url = f"{mnemo.url}/v3/workspaces"
    httpx.post(url, json={"id": workspace}, headers=admin).raise_for_status()
    base = f"{url}/{workspace}/sessions"
    httpx.post(base, json={"id": "s", "peers": {"a": {}}}, headers=admin).raise_for_status()
    garbage = b"not an event " + workspace.encode()

    async def publish_garbage() -> None:
        nc = await nats.connect(nats_url)
        await nc.jetstream().publish(f"mnemo.evt.{workspace}.msg.s", garbage)
        await nc.close()

    asyncio.run(publish_garbage())
    # Posted after the bad event: answered only once the projection is past it.
    httpx.post(
        f"{base}/s/messages",
        json={"messages": [{"peer_id": "a", "content": "After it."}]},
        headers=admin,
    ).raise_for_status()
    page = httpx.post(f"{base}/s/messages/list", headers=admin).json()
    assert [m["content"] for m in page["items"]] == ["After it."]

    def parked() -> dict[str, tuple[object, ...]]:
        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT stage, reason, subject, session_id, data FROM dead_letters"
                " WHERE workspace = %s",
                (workspace,),
            ).fetchall()
        return {r[0]: r[1:] for r in rows}

    partition = subjects.partition_of(workspace, subjects.DEFAULT_PARTITIONS)
    try:
        until(lambda: {"projector-pg", "deriver", "summarizer"} <= set(parked()), timeout=20)
        for reason, subject, session, data in parked().values():
            assert str(reason).startswith("undecodable event")
            # The stored subject: the stream adds the workspace's partition.
            stored = f"mnemo.evt.{workspace}.{partition}.msg.s"
            assert (subject, session, bytes(data)) == (stored, "s", garbage)
    finally:
        # Settled, so that the shared stack is ready again for the tests after this one.
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE dead_letters SET status = 'discarded' WHERE workspace = %s", (workspace,)
            )
