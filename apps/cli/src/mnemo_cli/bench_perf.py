"""``mnemo bench-perf``: write-path throughput and latency against the running stack.

Figures: messages/s from the first POST of 100-message batches until every message is projected,
and p50 / p99 latency of single-message POSTs, each with N concurrent clients. They are taken
twice: with the write path alone (gateway, ingest, projector; the memory process stopped), and
with memory formation running beside it on the same cores, deriving from what the runs post.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from mnemo_cli import bench_context, bench_grpc, bench_load, bench_load_report
from mnemo_cli.bench_http import Conn
from mnemo_cli.bench_memory import embedding, freshness, freshness_while_reading
from mnemo_cli.bench_storage import compare_stores
from mnemo_cli.keys import auth_headers
from mnemo_cli.local import gateway_url, grpc_address, stop, up
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import local_api_key

SENTENCE = "I finally moved to Lisbon last week and the light here is wonderful in the evenings."


async def _setup(url: str, clients: int) -> tuple[str, list[Conn]]:
    ws = f"bench-{uuid.uuid4().hex[:8]}"
    conns = [await Conn.open(url) for _ in range(clients)]
    await conns[0].post("/v3/workspaces", {"id": ws})
    for i in range(clients):
        body = {"id": f"s{i}", "peers": {"user": {}, "assistant": {"observe_others": True}}}
        await conns[0].post(f"/v3/workspaces/{ws}/sessions", body)
    return ws, conns


async def _throughput(url: str, clients: int, seconds: float) -> dict[str, float]:
    ws, conns = await _setup(url, clients)
    sent = 0
    start = time.monotonic()
    deadline = start + seconds

    async def client(i: int) -> None:
        nonlocal sent
        n = 0
        while time.monotonic() < deadline:
            batch = [
                {"peer_id": "user" if j % 2 else "assistant", "content": f"{SENTENCE} ({n}.{j})"}
                for j in range(100)
            ]
            n += 1
            await conns[i].post(f"/v3/workspaces/{ws}/sessions/s{i}/messages", {"messages": batch})
            sent += len(batch)

    await asyncio.gather(*(client(i) for i in range(clients)))
    # Every POST answered after its projection, so all messages are projected by now.
    took = time.monotonic() - start
    page = json.loads(await conns[0].post(f"/v3/workspaces/{ws}/sessions/s0/messages/list", {}))
    if page["total"] <= 0:
        raise RuntimeError("nothing was projected")
    for c in conns:
        c.close()
    return {"messages": sent, "seconds": took, "messages_per_s": sent / took}


async def _latency(url: str, clients: int, seconds: float) -> dict[str, float]:
    ws, conns = await _setup(url, clients)
    lat: list[float] = []
    deadline = time.monotonic() + seconds
    one = {"messages": [{"peer_id": "user", "content": SENTENCE}]}

    async def client(i: int) -> None:
        while time.monotonic() < deadline:
            t = time.perf_counter()
            await conns[i].post(f"/v3/workspaces/{ws}/sessions/s{i}/messages", one)
            lat.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(client(i) for i in range(clients)))
    for c in conns:
        c.close()
    lat.sort()
    q = statistics.quantiles(lat, n=100)
    return {"requests": len(lat), "p50_ms": q[49], "p99_ms": q[98], "max_ms": lat[-1]}


async def _write_path(
    url: str, clients: int, seconds: float, label: str
) -> dict[str, dict[str, float]]:
    """Single-message latency, then batch throughput."""
    await _latency(url, clients, 1.0)  # warm-up
    print(f"write path ({label}): single-message latency ...", flush=True)
    lat = await _latency(url, clients, seconds)
    print(f"write path ({label}): throughput ...", flush=True)
    tput = await _throughput(url, clients, seconds)
    return {"post_latency": lat, "throughput": tput}


def _write_path_rows(label: str, run: dict[str, dict[str, float]]) -> list[tuple[str, str, str]]:
    tput, lat = run["throughput"], run["post_latency"]
    return [
        (
            f"ingest throughput, 100-msg batches, until projected ({label})",
            f"{tput['messages_per_s']:.0f} msg/s",
            ">= 3000 msg/s",
        ),
        (f"single-message POST p50 ({label})", f"{lat['p50_ms']:.1f} ms", ""),
        (f"single-message POST p99 ({label})", f"{lat['p99_ms']:.1f} ms", "<= 25 ms"),
    ]


def _ms(f: dict[str, float], *keys: str) -> str:
    return " / ".join(f"{f.get(k, 0.0):.1f}" for k in keys) + " ms"


# Read case -> (label, the percentiles shown, the target).
READS = {
    "search": ("search (workspace, 10 messages)", ("p50_ms", "p95_ms"), "p95 <= 20 ms"),
    "conclusions_query": ("conclusions.query (10)", ("p50_ms", "p95_ms"), "p95 <= 20 ms"),
    "search_query": ("get_context with a search query", ("p50_ms", "p99_ms"), "p99 <= 20 ms"),
    "dialectic_prefetch": ("dialectic prefetch (12 observations)", ("p50_ms", "p95_ms"), ""),
    "summary": ("get_context, summary + messages", ("p50_ms", "p99_ms"), ""),
    "no_summary": ("get_context, 8,192 tokens of messages", ("p50_ms", "p99_ms"), ""),
}


def _cpu_per_call(by_size: dict[Any, dict[str, float] | None]) -> tuple[str, str] | None:
    """A read's CPU at each size, Postgres's (when measured) and the reading process's: the
    label's end and the value (None for results from before it was measured)."""
    measured = {n: c for n, c in by_size.items() if c}
    if not measured:
        return None
    parts = (
        ["postgres", "reader"] if all("postgres" in c for c in measured.values()) else ["reader"]
    )
    sizes = " ; ".join(f"{int(n):,}" for n in measured)
    values = " ; ".join(" / ".join(f"{c[k]:.1f}" for k in parts) for c in measured.values())
    return f"CPU a call, {' / '.join(parts)}, {sizes} msgs", f"{values} ms"


def _context_rows(context: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The reads at each size: p50 and p95 or p99 (embedding included), and the growth."""
    sizes = context.get("sizes", {})
    rows: list[tuple[str, str, str]] = []
    for case, (label, keys, target) in READS.items():
        for n, figures in sizes.items():
            f = figures[case]
            shown = " / ".join(k.removesuffix("_ms") for k in keys)
            rows.append((f"{label}, {int(n):,} msgs + obs, {shown}", _ms(f, *keys), target))
        growth = context.get("p50_growth", {}).get(case, 0.0)
        rows.append((f"{label}, p50 growth 1k -> 100k", f"{growth:.2f}x", ""))
        if cpu := _cpu_per_call({n: figures[case].get("cpu_ms") for n, figures in sizes.items()}):
            rows.append((f"{label}, {cpu[0]}", cpu[1], ""))
    for n, figures in sizes.items():
        tokens = figures["search_query"]["tokens"]
        rows.append((f"tokens per context (budget 8192), {int(n):,} msgs", f"{tokens}", ""))
    return rows


def _storage_rows(stores: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The two embedded vector stores on the same points."""
    n = int(stores.get("in_representation", 0))
    rows = []
    for key, label in (
        ("pgvector", "pgvector (HNSW, iterative scan)"),
        ("edge", "qdrant-edge, new points (scanned)"),
        ("edge_optimized", "qdrant-edge after optimize()"),
    ):
        if key in stores:
            rows.append(
                (
                    f"vector search in one representation, {n:,} obs + {n:,} passages: {label}"
                    ", p50 / p95",
                    _ms(stores[key], "p50_ms", "p95_ms"),
                    "",
                )
            )
    return rows


async def bench(
    settings: InfraSettings,
    seconds: float = 10.0,
    clients: int = 4,
    vectors: int = 100_000,
    memory: bool = True,
    load: str = "with",
) -> dict[str, object]:
    """Run the benchmarks and print a table; results also go to bench-out/perf.json.

    ``load``: ``with`` the figures under load (``bench_load``), ``only`` them, or ``skip``.
    """
    # Without the memory benchmarks, the write path alone: no memory process competes.
    await asyncio.to_thread(up, settings, 90.0, memory)
    if load == "only":
        figures = await bench_load.run(settings, bench_load.LoadSettings(), gateway_url())
        _table(bench_load_report.rows(figures))
        return _write({"load": figures})
    limits = httpx.Limits(max_connections=clients * 2)
    headers = auth_headers(settings)
    async with httpx.AsyncClient(
        base_url=gateway_url(), timeout=30, limits=limits, headers=headers
    ) as http:
        # Memory figures first, on an idle machine: the write-path runs leave the deriver a
        # backlog that would compete for the cores.
        fresh: dict[str, float] = {}
        fresh_reading: dict[str, float] = {}
        stores: dict[str, Any] = {}
        embed: dict[str, float] = {}
        context: dict[str, Any] = {}
        if memory:
            print("memory: freshness ...", flush=True)
            fresh = await freshness(http)
            print("memory: freshness of a two-peer chat while another client reads ...", flush=True)
            fresh_reading = await freshness_while_reading(http)
            print("memory: embedding throughput and query latency ...", flush=True)
            embed = await embedding()
            print(
                f"memory: the vector stores side by side at {vectors:,} + {vectors:,} ...",
                flush=True,
            )
            stores = await compare_stores(vectors)
            print(
                "memory: the reads at 1,000 and 100,000 messages and observations ...", flush=True
            )
            context = await bench_context.run()
    # After the other memory figures: the load leaves memory formation a backlog. Before the
    # write path, which stops the memory process.
    load_figures: dict[str, Any] = {}
    if memory and load == "with":
        load_figures = await bench_load.run(settings, bench_load.LoadSettings(), gateway_url())
    url = gateway_url()
    runs: dict[str, dict[str, dict[str, float]]] = {}
    grpc_figures: dict[str, Any] = {}
    if memory and not stop(settings, "memory"):  # one process runs it all (MNEMO_COMPONENTS)
        label = "all components in one process"
        runs[label] = await _write_path(url, clients, seconds, label)
    else:
        if memory:
            print("write path alone: the memory process is stopped for these runs", flush=True)
        runs["write path alone"] = await _write_path(url, clients, seconds, "write path alone")
        grpc_figures = await bench_grpc.run(
            grpc_address(), url, clients, seconds, local_api_key(settings.state_dir)
        )
        if memory:
            await asyncio.to_thread(up, settings, 90.0, True)
            label = "memory formation running"
            runs[label] = await _write_path(url, clients, seconds, label)
    rows = [row for label, run in runs.items() for row in _write_path_rows(label, run)]
    rows += bench_grpc.rows(grpc_figures)
    rows += [
        (
            "freshness: accepted -> searchable, p50",
            f"{fresh.get('p50_ms', 0.0):.0f} ms",
            "< 1000 ms",
        ),
        ("freshness: accepted -> searchable, p99", f"{fresh.get('p99_ms', 0.0):.0f} ms", ""),
        (
            "freshness, two peers observing each other, another client reading"
            f" ({fresh_reading.get('reads_per_s', 0.0):.0f} reads/s):"
            " accepted -> searchable in both, p50 / p99",
            f"{fresh_reading.get('p50_ms', 0.0):.0f} / {fresh_reading.get('p99_ms', 0.0):.0f} ms",
            "p50 < 1000 ms",
        ),
        (
            "embedding throughput (MiniLM, onnxruntime)",
            f"{embed.get('sentences_per_s', 0.0):.0f} sent/s",
            ">= 300 sent/s",
        ),
        ("embedding one search query p50", f"{embed.get('query_p50_ms', 0.0):.1f} ms", ""),
        ("embedding one search query p99", f"{embed.get('query_p99_ms', 0.0):.1f} ms", ""),
        *_storage_rows(stores),
        *_context_rows(context),
    ]
    if not memory:
        rows = rows[: 3 + len(bench_grpc.rows(grpc_figures))]
    rows += bench_load_report.rows(load_figures)
    print(f"\nMnemo, {clients} concurrent clients, {seconds:.0f}s per write-path run\n")
    _table(rows)
    result: dict[str, object] = {
        "clients": clients,
        "write_path": runs,
        "freshness": fresh,
        "freshness_while_reading": fresh_reading,
        "embedding_sentences_per_s": embed.get("sentences_per_s", 0.0),
        "embedding": embed,
        "vector_stores": stores,
        "reads": context,
        "grpc": grpc_figures,
        "load": load_figures,
    }
    return _write(result)


def _table(rows: list[tuple[str, str, str]]) -> None:
    """Print ``rows`` as a markdown table."""
    w1, w2, w3 = (
        max(len(r[i]) for r in [("benchmark", "result", "target"), *rows]) for i in range(3)
    )
    print(f"| {'benchmark':<{w1}} | {'result':>{w2}} | {'target':>{w3}} |")
    print(f"|{'-' * (w1 + 2)}|{'-' * (w2 + 2)}|{'-' * (w3 + 2)}|")
    for name, value, target in rows:
        print(f"| {name:<{w1}} | {value:>{w2}} | {target:>{w3}} |")


def _write(result: dict[str, object]) -> dict[str, object]:
    """``result`` to bench-out/perf.json; ``result``."""
    out = Path("bench-out")
    out.mkdir(exist_ok=True)
    (out / "perf.json").write_text(json.dumps(result, indent=2))
    return result
