"""The read benchmark's timing: each size's calls in turns, and the CPU each call cost."""

from __future__ import annotations

import os
import time
from typing import Any, cast

from mnemo_cli.bench_context import TURN, _time
from mnemo_cli.bench_perf import _context_rows
from mnemo_context.handlers import ContextService

BURN_S = 0.004


def _burn(seconds: float) -> None:
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


async def test_each_call_is_timed_in_turns_and_its_cpu_counted() -> None:
    order: list[str] = []

    async def call(service: ContextService, ws: str, question: str) -> Any:
        order.append(ws)
        _burn(BURN_S if ws == "big" else 0.0)
        return None

    spaces = {1_000: "small", 100_000: "big"}
    samples = 2 * TURN + 3
    # This process stands for the server: its CPU is the tree's (its own and its children's).
    got = await _time(cast(ContextService, None), spaces, call, samples, os.getpid())
    timed = order[2 * 10 :]  # after the warm-up, one call a size ten times
    assert timed[:TURN] == ["small"] * TURN and timed[TURN : 2 * TURN] == ["big"] * TURN
    assert timed.count("small") == timed.count("big") == samples
    big, small = got[100_000], got[1_000]
    assert big["p50_ms"] >= BURN_S * 1000 > small["p50_ms"]
    assert big["cpu_ms"]["reader"] >= 0.9 * BURN_S * 1000 > small["cpu_ms"]["reader"]
    assert big["cpu_ms"]["postgres"] >= 0.9 * BURN_S * 1000


async def test_without_the_servers_pid_only_the_readers_cpu_is_given() -> None:
    async def call(service: ContextService, ws: str, question: str) -> Any:
        return None

    got = await _time(cast(ContextService, None), {1_000: "w"}, call, 5)
    assert set(got[1_000]["cpu_ms"]) == {"reader"}


def _case(p50: float, cpu: dict[str, float] | None) -> dict[str, Any]:
    figures: dict[str, Any] = {"p50_ms": p50, "p95_ms": p50, "p99_ms": p50, "tokens": 100}
    return figures | ({"cpu_ms": cpu} if cpu is not None else {})


def _context(cpu: dict[int, dict[str, float] | None]) -> dict[str, Any]:
    cases = ("search", "conclusions_query", "search_query", "dialectic_prefetch")
    sizes = {
        str(n): {case: _case(10.0, c) for case in (*cases, "summary", "no_summary")}
        for n, c in cpu.items()
    }
    return {"sizes": sizes, "p50_growth": {}}


def test_the_table_gives_a_reads_cpu_at_each_size() -> None:
    context = _context(
        {1_000: {"reader": 10.94, "postgres": 10.58}, 100_000: {"reader": 11.3, "postgres": 15.8}}
    )
    table = {name: value for name, value, _ in _context_rows(context)}
    label = "get_context with a search query, CPU a call, postgres / reader, 1,000 ; 100,000 msgs"
    assert table[label] == "10.6 / 10.9 ; 15.8 / 11.3 ms"
    reader_only = _context({1_000: {"reader": 2.0}})
    table = {name: value for name, value, _ in _context_rows(reader_only)}
    assert table["search (workspace, 10 messages), CPU a call, reader, 1,000 msgs"] == "2.0 ms"
    earlier = _context({1_000: None})  # a result from before the CPU was measured
    assert not any("CPU a call" in name for name, _, _ in _context_rows(earlier))
