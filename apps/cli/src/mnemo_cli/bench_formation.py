"""Memory formation under load, measured through the HTTP API: the sustained rate, freshness at
half of it, freshness of one workspace behind another's backlog, and a chat's queue after a
burst.

Freshness is timed from a message's acceptance (its POST answered) until an observation from
it is returned by a scoped ``conclusions/query``, and until the message is found by the
workspace's ``search``. Each probe names a word of its own, so that nothing else matches.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from mnemo_cli.bench_http import Conn
from mnemo_cli.bench_memory import FACTS
from mnemo_cli.bench_traffic import (
    Corpus,
    PacedLoad,
    drained,
    percentiles,
    post_flat_out,
    queue,
    wait_drained,
    workspace,
)
from mnemo_schema.subjects import partition_of

PROBE = "probe"
POLL_S = 0.05


def workspace_id(prefix: str, partitions: int, wanted: Callable[[int], bool]) -> str:
    """A new workspace id whose partition ``wanted`` accepts."""
    while True:
        ws = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if wanted(partition_of(ws, partitions)):
            return ws


async def probe_session(conn: Conn, ws: str) -> None:
    """The session the probes are posted to: one peer, its own representation."""
    await conn.post(f"/v3/workspaces/{ws}/sessions", {"id": PROBE, "peers": {PROBE: {}}})


async def probe(conn: Conn, ws: str, n: int, timeout: float = 60.0) -> dict[str, float | None]:
    """Post one new fact; ms from its acceptance until it is an observation found by a scoped
    query (``observation_ms``) and a message found by search (``search_ms``); None for what
    was not found within ``timeout``."""
    word = f"Qz{uuid.uuid4().hex[:6]}x"
    text = FACTS[n % len(FACTS)].format(n=word)
    body = {"messages": [{"peer_id": PROBE, "content": text}]}
    await conn.post(f"/v3/workspaces/{ws}/sessions/{PROBE}/messages", body)
    accepted = time.perf_counter()
    conclusions = {
        "query": text,
        "top_k": 3,
        "filters": {"observer_id": PROBE, "observed_id": PROBE},
    }
    found: dict[str, float] = {}
    while len(found) < 2 and time.perf_counter() - accepted < timeout:
        if "observation_ms" not in found:
            got = await conn.json("POST", f"/v3/workspaces/{ws}/conclusions/query", conclusions)
            if any(word in c["content"] for c in got):
                found["observation_ms"] = (time.perf_counter() - accepted) * 1000
        if "search_ms" not in found:
            hits = await conn.json("POST", f"/v3/workspaces/{ws}/search", {"query": text})
            if any(word in m["content"] for m in hits):
                found["search_ms"] = (time.perf_counter() - accepted) * 1000
        # Each look costs the stack a few milliseconds of CPU, which the work looked for needs.
        await asyncio.sleep(POLL_S)
    return {k: found.get(k) for k in ("observation_ms", "search_ms")}


async def probes(conn: Conn, ws: str, samples: int, timeout: float) -> dict[str, Any]:
    """``samples`` probes one after another; the percentiles of each kind of freshness. Two
    probes in a row never found end the run (the rest count as never found)."""
    got: list[dict[str, float | None]] = []
    for i in range(samples):
        got.append(await probe(conn, ws, i, timeout))
        if len(got) >= 2 and all(g["observation_ms"] is None for g in got[-2:]):
            break
    out: dict[str, Any] = {}
    for kind in ("observation_ms", "search_ms"):
        values = [v for g in got if (v := g[kind]) is not None]
        out[kind] = percentiles(values)
        out[kind]["not_found"] = samples - len(values)
    return out


async def formation(
    conns: list[Conn],
    ws: str,
    corpus: Corpus,
    n: int,
    start: int,
    timeout: float,
    report_every: float | None = None,
) -> dict[str, float]:
    """Post ``n`` messages flat out to ``ws``'s history; messages/s from the first POST until
    the queue counts every unit completed (derived, applied and searchable). Past
    ``timeout`` (``drained`` False) the rate is a bound: fewer were formed by then. (Units
    complete in steps, a representation's when the memory projection has applied all it has
    derived so far, so the share completed at a moment does not say how many are formed.)
    ``report_every``: see ``wait_drained``."""
    began = time.perf_counter()
    posted = await post_flat_out(conns, ws, "history", corpus, n, start)
    queue = await wait_drained(conns[0], ws, timeout, report_every=report_every)
    took = time.perf_counter() - began
    return {
        "messages": n,
        "post_s": posted,
        "seconds": took,
        "msg_per_s": n / took,
        "drained": queue["drained"],
        "completed_units": queue["completed_units"],
        "total_units": queue["total_units"],
        "queue_status_p50_ms": queue["status_p50_ms"],
    }


async def freshness_under(
    url: str, corpus: Corpus, rate: float, samples: int, timeout: float
) -> dict[str, Any]:
    """Freshness of probes while ``rate`` messages/s are posted to the same workspace."""
    conn = await Conn.open(url)
    ws = await workspace(conn, f"lb-fresh-{uuid.uuid4().hex[:8]}", ["load"])
    await probe_session(conn, ws)
    batch = max(1, min(100, round(rate / 10)))  # about ten POSTs a second
    load = PacedLoad(url, ws, "load", corpus, rate, batch=batch, clients=2)
    await load.start()
    await asyncio.sleep(2.0)  # the load settles in
    fresh = await probes(conn, ws, samples, timeout)
    achieved = await load.stop()
    await wait_drained(conn, ws, timeout * 4)
    conn.close()
    return {"load": achieved, **fresh}


def _unfinished(status: dict[str, Any]) -> int:
    """Units pending or in progress."""
    return int(status["pending_work_units"]) + int(status["in_progress_work_units"])


async def _first_taken(conn: Conn, ws: str, session: str) -> bool:
    """Whether the deriver has taken any unit of ``session`` (in progress or done)."""
    for observer in ("user", "assistant"):
        s = await queue(conn, ws, session, observer_id=observer)
        if s["total_work_units"] - s["pending_work_units"] > 0:
            return True
    return False


async def chat_after_burst(
    url: str,
    corpus: Corpus,
    burst: int,
    chat: int,
    partitions: int,
    samples: int,
    timeout: float,
) -> dict[str, Any]:
    """``burst`` messages flat out to workspace A, then a chat of ``chat`` messages in workspace
    C (another partition): when the deriver reaches the chat (its first unit taken) and when
    its queue drains. Then, with A's backlog still there, probes in a workspace B of another
    partition and in one of A's partition."""
    conns = [await Conn.open(url) for _ in range(4)]
    a = await workspace(conns[0], f"lb-burst-{uuid.uuid4().hex[:8]}", ["history"])
    home = partition_of(a, partitions)
    c = await workspace(conns[0], workspace_id("lb-chat", partitions, home.__ne__), ["chat"])
    apart = workspace_id("lb-other", partitions, home.__ne__)
    beside = workspace_id("lb-beside", partitions, home.__eq__)
    for ws in (apart, beside):
        await probe_session(conns[0], await workspace(conns[0], ws, []))
    posted = await post_flat_out(conns, a, "history", corpus, burst)
    started = time.perf_counter()
    for m in corpus.messages(len(corpus.turns) // 2, chat):
        await conns[0].post(f"/v3/workspaces/{c}/sessions/chat/messages", {"messages": [m]})
    sent = time.perf_counter()
    reached: float | None = None
    drain: float | None = None
    while time.perf_counter() - sent < timeout:
        if reached is None and await _first_taken(conns[0], c, "chat"):
            reached = time.perf_counter()
        if drained(await queue(conns[0], c, "chat")):
            drain = time.perf_counter()
            reached = reached or drain
            break
        await asyncio.sleep(0.05)
    unfinished_before = _unfinished(await queue(conns[1], a))
    other = await probes(conns[0], apart, samples, timeout)
    same = await probes(conns[0], beside, samples, timeout)
    unfinished_after = _unfinished(await queue(conns[1], a))
    for conn in conns:
        conn.close()

    def since(t: float | None, origin: float | None) -> float | None:
        return t - origin if t is not None and origin is not None else None

    return {
        "burst": {"messages": burst, "post_s": posted},
        "chat": {
            "messages": chat,
            "post_s": sent - started,
            "reached_s": since(reached, sent),
            "drained_after_post_s": since(drain, sent),
            "drained_after_reached_s": since(drain, reached),
        },
        "fairness": {
            "a_unfinished_units": [unfinished_before, unfinished_after],
            "other_partition": other,
            "same_partition": same,
        },
    }
