"""With a model that takes its time for each summary, one workspace's summaries do not keep a
workspace of the same partition from being counted, and a stack killed while summaries are due
writes each of them once after it starts again (real JetStream, Postgres and the all-in-one
process; the summarizer's model is a chat-completions server on the host answering after a
delay, the other stages the local reasoner)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
import uvicorn
from fastapi import FastAPI, Request
from honcho import Honcho

from mnemo_runtime.stack import LocalNats, free_port
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects
from mnemo_schema.events import decode_event
from mnemo_schema.summaries import SummaryUpdated

from .conftest import MnemoProcess, neighbour

SLOW_S = 0.3  # each summary's answer
MESSAGES = 40  # to A, in one session: a short summary every 2, written one after another


class SlowModel:
    """A chat-completions server answering every request after ``SLOW_S``."""

    def __init__(self) -> None:
        self.calls = 0
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> dict[str, Any]:
            body = await request.json()
            self.calls += 1
            await asyncio.sleep(SLOW_S)
            return {
                "id": f"c{self.calls}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "slow"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "They spoke of their week."},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
            }

        self.port = free_port()
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> SlowModel:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the model server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)


@pytest.fixture
def own_stack(tmp_path: Path) -> Iterator[tuple[str, SlowModel]]:
    server = LocalNats(tmp_path / "nats", free_port())
    url = server.start()
    with SlowModel() as model:
        yield url, model
    server.stop()


async def _summaries(url: str, workspace: str) -> list[SummaryUpdated]:
    nc = await nats.connect(url)
    try:
        stored = await read_stored(
            nc.jetstream(),
            subjects.STREAM,
            subjects.of_workspace(subjects.summary_filter(), workspace),
        )
    finally:
        await nc.close()
    return [e for s in stored if isinstance(e := decode_event(s.data), SummaryUpdated)]


def _drained(h: Honcho) -> bool:
    status = h.queue_status()
    return bool(status.total_work_units) and not (
        status.pending_work_units or status.in_progress_work_units
    )


def test_a_burst_of_summaries_holds_back_no_neighbour_and_a_kill_loses_none(
    own_stack: tuple[str, SlowModel],
    fresh_database: str,
    spawn: Callable[..., MnemoProcess],
    until: Callable[[Callable[[], bool], float], None],
) -> None:
    url, model = own_stack
    proc = spawn(
        url,
        fresh_database,
        MNEMO_MODEL_DEFAULT="local",
        MNEMO_MODEL_SUMMARIZER="openai:slow",
        MNEMO_MODEL_OPENAI_BASE_URL=f"http://127.0.0.1:{model.port}/v1",
        MNEMO_MODEL_OPENAI_API_KEY="sk-local",
        MNEMO_SUMMARIZER_MESSAGES_PER_SHORT_SUMMARY="2",
        MNEMO_SUMMARIZER_MESSAGES_PER_LONG_SUMMARY="1000",
    ).start()
    a = "summary-turns-a"
    b = neighbour(a, subjects.DEFAULT_PARTITIONS)
    ha = Honcho(base_url=proc.url, workspace_id=a, max_retries=0, timeout=30)
    hb = Honcho(base_url=proc.url, workspace_id=b, max_retries=0, timeout=30)
    ann, bob = ha.peer("ann"), ha.peer("bob")
    ha.session("s", peers=[ann, bob]).add_messages(
        [
            (ann if i % 2 else bob).message(f"Week {i}: I went hiking again.")
            for i in range(MESSAGES)
        ]
    )
    cat = hb.peer("cat")
    hb.session("s", peers=[cat]).add_messages([cat.message("I planted tomatoes today.")] * 2)
    # B's units (its summarizer's among them) complete while A's summaries are still written.
    until(lambda: _drained(hb), 60)
    written_then = model.calls
    assert written_then < MESSAGES // 2, written_then
    # Killed while A's summaries are due; started again, it writes the rest.
    proc.kill()
    proc.start()
    until(lambda: _drained(ha), 120)
    status = ha.queue_status()  # none failed: every unit completed
    assert status.completed_work_units == status.total_work_units
    summaries = asyncio.run(_summaries(url, a))
    # Each summary once (one written again after the kill is the same event, which the log
    # keeps once), and none missing.
    seqs = Counter(s.message_id for s in summaries if s.summary_type == "short")
    assert len(seqs) == MESSAGES // 2 and set(seqs.values()) == {1}
    print(f"B drained with {written_then} of A's {MESSAGES // 2} summaries written")
