"""The traffic of the load benchmarks: what a new user sends, flat out or paced, over HTTP.

Messages are LoCoMo's conversation turns (``MNEMO_DATASETS``), so the local reasoner derives
from real talk; without the dataset, generated sentences. Questions are LoCoMo's questions.
Posting uses the lean keep-alive client (``bench_http``) in 100-message batches.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemo_cli.bench_http import Conn
from mnemo_cli.locomo import datasets_dir, load
from mnemo_runtime.embeddings.bench import benchmark_sentences

PEERS = {"user": {}, "assistant": {"observe_others": True}}
BATCH = 100


@dataclass(frozen=True)
class Corpus:
    """Turns to post, as (peer, text), and questions to ask."""

    turns: list[tuple[str, str]]
    questions: list[str]

    @classmethod
    def locomo(cls) -> Corpus:
        """LoCoMo's turns (speaker A as ``user``, B as ``assistant``) and questions."""
        path = datasets_dir() / "locomo" / "locomo-dev5.json"
        if not path.exists():
            sentences = benchmark_sentences(2_000)
            turns = [("user" if i % 2 else "assistant", s) for i, s in enumerate(sentences)]
            return cls(turns, [s for s in sentences if s.endswith("?")] or sentences[:50])
        convs = load(path)
        turns = [
            ("user" if t.speaker == c.speaker_a else "assistant", t.text)
            for c in convs
            for s in c.sessions
            for t in s.turns
        ]
        questions = [q["question"] for item in json.loads(path.read_text()) for q in item["qa"]]
        return cls(turns, questions)

    def messages(self, start: int, n: int) -> list[dict[str, str]]:
        """Messages ``start`` to ``start + n`` of an endless run of the turns."""
        out = []
        for i in range(start, start + n):
            peer, text = self.turns[i % len(self.turns)]
            out.append({"peer_id": peer, "content": retold(text, i // len(self.turns))})
        return out


_SENTENCE_END = re.compile(r"([.!?]+)(\s|$)")


def retold(text: str, round_: int) -> str:
    """``text`` told again for the ``round_``-th time (0: as it is): every sentence carries the
    round, so that what is derived from it is new too, not a duplicate of the first telling
    (which the memory projection would only count)."""
    if not round_:
        return text
    mark = f" (take {round_ + 1})"
    if not _SENTENCE_END.search(text):
        return text + mark
    return _SENTENCE_END.sub(lambda m: f"{mark}{m.group(1)}{m.group(2)}", text)


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    """n, p50, p95, p99 and max of latencies in milliseconds (zeros for none)."""
    if not values_ms:
        return {"n": 0, "p50_ms": 0.0, "p95_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    p50, p95, p99 = np.percentile(np.asarray(values_ms), [50, 95, 99])
    return {
        "n": len(values_ms),
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "max_ms": float(max(values_ms)),
    }


# The first moments of a batch's POST, when its write work (the decision, the append of its
# events, the projection of its messages) is at its peak: reads beginning in a batch's first
# 10 ms were the slowest, those beginning 10-40 ms after it slower than the rest
# (docs/under-load.md, "The write path's bursts").
BATCH_HEAD_S = 0.025


def beside_batches(
    reads: Sequence[tuple[float, float]],
    posts: Sequence[tuple[float, float]],
    head_s: float = BATCH_HEAD_S,
) -> dict[str, dict[str, float]]:
    """The reads (each as its start and end) split in two: those running during the first
    ``head_s`` of some batch's POST (``during``), and the rest, each part's percentiles."""
    starts = sorted(p[0] for p in posts)
    during: list[float] = []
    rest: list[float] = []
    for began, ended in reads:
        # The last batch begun before the read ended: the read meets its head unless that head
        # was over before the read began (an earlier batch's head ended earlier still).
        i = bisect.bisect_right(starts, ended) - 1
        met = i >= 0 and starts[i] + head_s >= began
        (during if met else rest).append((ended - began) * 1000)
    return {"during": percentiles(during), "rest": percentiles(rest)}


# Every workspace ``workspace`` made in this process, in order: a run on a deployed Mnemo
# deletes them when it is done.
MADE: list[str] = []


async def workspace(conn: Conn, ws: str, sessions: Sequence[str]) -> str:
    """Create workspace ``ws`` with ``sessions``, each with the peers of ``PEERS``."""
    await conn.post("/v3/workspaces", {"id": ws})
    if ws not in MADE:
        MADE.append(ws)
    for s in sessions:
        await conn.post(f"/v3/workspaces/{ws}/sessions", {"id": s, "peers": PEERS})
    return ws


async def post_flat_out(
    conns: Sequence[Conn], ws: str, session: str, corpus: Corpus, n: int, start: int = 0
) -> float:
    """Post ``n`` messages as fast as the API takes them (a batch per connection at a time);
    the seconds it took."""
    batches = iter(range(start, start + n, BATCH))
    began = time.perf_counter()

    async def client(conn: Conn) -> None:
        for at in batches:
            size = min(BATCH, start + n - at)
            body = {"messages": corpus.messages(at, size)}
            await conn.post(f"/v3/workspaces/{ws}/sessions/{session}/messages", body)

    await asyncio.gather(*(client(c) for c in conns))
    return time.perf_counter() - began


async def queue(conn: Conn, ws: str, session: str | None = None, **filters: str) -> Any:
    """The SDK's queue status of ``ws`` (of one session, or under observer / sender filters)."""
    return await conn.json(
        "GET", f"/v3/workspaces/{ws}/queue/status", session_id=session, **filters
    )


def drained(status: dict[str, Any]) -> bool:
    """Whether a queue status has work and none of it pending or in progress."""
    busy = int(status["pending_work_units"]) + int(status["in_progress_work_units"])
    return int(status["total_work_units"]) > 0 and busy == 0


async def wait_drained(
    conn: Conn,
    ws: str,
    timeout: float,
    session: str | None = None,
    every: float = 0.5,
    report_every: float | None = None,
) -> dict[str, Any]:
    """Wait until the queue of ``ws`` (or of one session) has drained, or ``timeout`` has
    passed; the seconds waited, whether it drained, its units completed and in all, and what
    a queue status took (p50, ms). With ``report_every``, a line of the queue's progress is
    printed that often (``progress_line``).

    The status of a large workspace costs the database hundreds of milliseconds: it is asked
    for at most a tenth of the time, so that the waiting does not slow what it waits for.
    """
    began = time.perf_counter()
    took: list[float] = []
    reported = began
    while True:
        t = time.perf_counter()
        status = await queue(conn, ws, session)
        took.append(time.perf_counter() - t)
        done = drained(status)
        waited = time.perf_counter() - began
        if report_every is not None and not done and t - reported >= report_every:
            reported = t
            print(f"load:   {progress_line(status, waited)}", flush=True)
        if done or waited >= timeout:
            return {
                "seconds": waited,
                "drained": done,
                "completed_units": int(status["completed_work_units"]),
                "total_units": int(status["total_work_units"]),
                "status_p50_ms": percentiles([x * 1000 for x in took])["p50_ms"],
            }
        await asyncio.sleep(max(every, 9 * took[-1]))


def progress_line(status: dict[str, Any], waited_s: float) -> str:
    """A queue status as a line of progress: its units completed of all, those in progress,
    and how long it has been waited on. (No time left is guessed: a representation's units
    complete together, when the memory projection has applied what was derived for them.)"""
    total = int(status["total_work_units"])
    completed = int(status["completed_work_units"])
    share = 100.0 * completed / total if total else 0.0
    return (
        f"{completed:,} of {total:,} work units completed ({share:.0f}%),"
        f" {int(status['in_progress_work_units']):,} in progress, after {waited_s:.0f} s"
    )


@dataclass
class PacedLoad:
    """``rate`` messages/s to one session, in batches of ``batch`` on up to ``clients``
    connections; a batch that finds no free connection waits (the rate achieved says so)."""

    url: str
    ws: str
    session: str
    corpus: Corpus
    rate: float
    batch: int = BATCH
    clients: int = 4
    start_at: int = 0
    sent: int = 0
    # Each batch's POST, from when it was sent to its answer (perf_counter seconds).
    post_spans: list[tuple[float, float]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _began: float = 0.0
    _ended: float = 0.0

    async def start(self) -> None:
        conns = [await Conn.open(self.url) for _ in range(self.clients)]
        self._task = asyncio.create_task(self._run(conns))

    async def _run(self, conns: list[Conn]) -> None:
        idle: asyncio.Queue[Conn] = asyncio.Queue()
        for c in conns:
            idle.put_nowait(c)
        path = f"/v3/workspaces/{self.ws}/sessions/{self.session}/messages"
        sending: set[asyncio.Task[None]] = set()

        async def send(conn: Conn, at: int) -> None:
            t = time.perf_counter()
            await conn.post(path, {"messages": self.corpus.messages(at, self.batch)})
            self.post_spans.append((t, time.perf_counter()))
            self.sent += self.batch
            idle.put_nowait(conn)

        self._began = time.perf_counter()
        for i in itertools.count():
            wait = self._began + i * self.batch / self.rate - time.perf_counter()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), wait)
            if self._stop.is_set():
                break
            conn = await idle.get()
            task = asyncio.create_task(send(conn, self.start_at + i * self.batch))
            sending.add(task)
            task.add_done_callback(sending.discard)
        await asyncio.gather(*sending)
        self._ended = time.perf_counter()
        for c in conns:
            c.close()

    async def stop(self) -> dict[str, float]:
        """Stop and wait for the batches on the way; what was achieved."""
        self._stop.set()
        if self._task is not None:
            await self._task
        seconds = self._ended - self._began
        posts = percentiles([(done - sent) * 1000 for sent, done in self.post_spans])
        return {
            "asked_msg_per_s": self.rate,
            "messages": self.sent,
            "seconds": seconds,
            "achieved_msg_per_s": self.sent / seconds if seconds else 0.0,
            "post_p50_ms": posts["p50_ms"],
            "post_p99_ms": posts["p99_ms"],
        }
