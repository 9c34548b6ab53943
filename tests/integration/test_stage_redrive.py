"""A stage's dead letter, redriven after a fix: the deriver derives the parked message again, on
real JetStream and Postgres, through ``mnemo dlq``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import psycopg

from mnemo_deriver.app import run as run_deriver
from mnemo_deriver.local import local_deriver
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.infra import open_infra
from mnemo_runtime.models import ModelRequest, ModelResponse

from .conftest import admin_headers

WS = "redrive"


class Fixable:
    """The local reasoner, broken (as by a bug) on one message until it is fixed."""

    def __init__(self) -> None:
        self.fixed = False
        self.local = local_deriver()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if not self.fixed and "lighthouse" in request.messages[0].text():
            raise KeyError("cannot read this message")
        return await self.local.complete(request)


def _letters(db: str) -> list[dict[str, object]]:
    with psycopg.connect(db) as conn:
        cur = conn.execute("SELECT id, stage, status, reason, detail FROM dead_letters")
        cols = [c.name for c in cur.description or ()]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


async def _until(predicate: object, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if predicate():  # type: ignore[operator]
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"condition not met within {timeout}s")


async def test_a_parked_message_is_derived_again_once_the_deriver_is_fixed(
    own_nats, fresh_database, write_path
):
    model = Fixable()
    stop = asyncio.Event()
    settings = DeriverSettings(max_attempts=1, idle_s=0.1, retry_delay_s=0.2)
    async with write_path(own_nats, fresh_database, "redrive-api", local=True) as app:
        infra = await open_infra(own_nats, fresh_database, "redrive-deriver")
        deriver = asyncio.create_task(run_deriver(settings, infra, stop, model=model))
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://t", headers=admin_headers()
            ) as http:
                await http.post("/v3/workspaces", json={"id": WS})
                await http.post(
                    f"/v3/workspaces/{WS}/sessions", json={"id": "s", "peers": {"ann": {}}}
                )
                r = await http.post(
                    f"/v3/workspaces/{WS}/sessions/s/messages",
                    json={
                        "messages": [
                            {"peer_id": "ann", "content": "I adopted a cat named Miso."},
                            {
                                "peer_id": "ann",
                                "content": "I restore an old lighthouse on weekends.",
                            },
                        ]
                    },
                )
                assert r.status_code == 201
            # Split from its batch, the message at fault is parked; the other one is derived.
            await _until(lambda: [x for x in _letters(fresh_database) if x["stage"] == "deriver"])
            (letter,) = _letters(fresh_database)
            assert "KeyError" in str(letter["reason"]) and letter["status"] == "open"
            assert len(letter["detail"]["seqs"]) == 1  # type: ignore[index]

            model.fixed = True
            out = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "mnemo_cli", "dlq", "redrive", str(letter["id"])],
                env={**os.environ, "DATABASE_URL": fresh_database},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert out.returncode == 0, out.stdout + out.stderr
            (after,) = _letters(fresh_database)
            assert after["status"] == "redriven"
            published = await _observations(infra.js)
            assert any("lighthouse" in o for o in published), published
            assert any("Miso" in o for o in published), published
        finally:
            stop.set()
            await deriver
            await infra.close()


async def _observations(js: object) -> list[str]:
    from nats.js.api import ConsumerConfig, DeliverPolicy

    from mnemo_schema import subjects

    sub = await js.pull_subscribe(  # type: ignore[attr-defined]
        subjects.OBSERVATION_FILTER, config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
    )
    out: list[str] = []
    try:
        while True:
            try:
                msgs = await sub.fetch(100, timeout=1)
            except Exception:
                break
            out += [json.loads(m.data)["content"] for m in msgs]
    finally:
        await sub.unsubscribe()
    return out
