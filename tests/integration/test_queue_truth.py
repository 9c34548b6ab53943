"""The queue status tells the truth through a crash: after a SIGKILL of the process forming
memory mid-burst and a restart, every unit ends completed (or failed, with its reason), none
stays in progress, and no observation is written twice."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import nats

from mnemo_schema import subjects
from mnemo_schema.events import decode_event
from mnemo_schema.observations import ObservationWritten

FACTS = [
    "I moved to Lisbon last spring.",
    "I work as a nurse at the city hospital.",
    "I have two dogs called Rex and Luna.",
    "I started learning the cello in May.",
]


def status(url: str, ws: str, headers: dict[str, str]) -> dict[str, int]:
    body = httpx.get(f"{url}/v3/workspaces/{ws}/queue/status", headers=headers, timeout=10).json()
    return {k: v for k, v in body.items() if k.endswith("_work_units")}


async def observation_ids(nats_url: str, ws: str) -> list[str]:
    nc = await nats.connect(nats_url)
    try:
        sub = await nc.jetstream().pull_subscribe(f"mnemo.evt.{ws}.*.obs.>", stream=subjects.STREAM)
        out = []
        while True:
            try:
                msgs = await sub.fetch(500, timeout=1.0)
            except Exception:
                return out
            for m in msgs:
                await m.ack()
                e = decode_event(m.data)
                if isinstance(e, ObservationWritten):
                    out.append(e.observation_id)
    finally:
        await nc.close()


def test_a_killed_memory_process_leaves_no_unit_in_progress(
    own_nats: str, fresh_database: str, spawn: object, until: object, admin: dict[str, str]
) -> None:
    first = spawn(own_nats, fresh_database).start(timeout=180)  # type: ignore[operator]
    ws = "crashing"
    base = f"{first.url}/v3/workspaces/{ws}"
    httpx.post(f"{first.url}/v3/workspaces", json={"id": ws}, headers=admin).raise_for_status()
    httpx.post(
        f"{base}/sessions", json={"id": "s", "peers": {"ann": {}, "bob": {}}}, headers=admin
    ).raise_for_status()

    def post(batch: int) -> None:
        body = {
            "messages": [
                {
                    "peer_id": "ann" if j % 2 == 0 else "bob",
                    "content": f"{FACTS[j % 4]} ({batch}.{j})",
                }
                for j in range(20)
            ]
        }
        httpx.post(
            f"{base}/sessions/s/messages", json=body, headers=admin, timeout=30
        ).raise_for_status()

    for i in range(10):
        post(i)
    # Killed while memory is forming: some units done, some not. On a fast machine the deriver
    # may finish the first burst before the status is read, so the burst goes on until the
    # status shows both; on a slow one, the idle-priority deriver may not have finished a unit
    # yet, and more posts would only keep it waiting.
    batches = iter(range(10, 200))
    seen: dict[str, int] = {}

    def forming() -> bool:
        seen.update(status(first.url, ws, admin))
        if 0 < seen["completed_work_units"] < seen["total_work_units"]:
            return True
        if seen["completed_work_units"] < seen["total_work_units"]:
            return False  # nothing completed yet: wait for the deriver
        batch = next(batches, None)
        assert batch is not None, f"the status never showed memory forming: {seen}"
        post(batch)
        return False

    until(forming, timeout=120)  # type: ignore[operator]
    first.kill()
    before = dict(seen)
    assert before["completed_work_units"] < before["total_work_units"], before

    second = spawn(own_nats, fresh_database).start(timeout=180)  # type: ignore[operator]

    def drained() -> bool:
        s = status(second.url, ws, admin)
        return s["pending_work_units"] == 0 and s["in_progress_work_units"] == 0

    until(drained, timeout=240)  # type: ignore[operator]
    after = status(second.url, ws, admin)
    # Every unit counted before the kill is still counted (dreams the schedule asked for since
    # come on top), and each one ended.
    assert after["total_work_units"] >= before["total_work_units"]
    assert after["completed_work_units"] + after["failed_work_units"] == after["total_work_units"]
    # Redone work published the same event ids, which the stream's duplicate window dropped.
    ids = asyncio.run(observation_ids(own_nats, ws))
    assert ids and not [i for i, n in Counter(ids).items() if n > 1]
