"""The read benchmark's timing: each size's calls in turns, and the CPU each call cost."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import pytest

from mnemo_cli.bench_context import TURN, _time, read_pool
from mnemo_cli.bench_cpu import Backends
from mnemo_cli.bench_perf import _context_rows
from mnemo_cli.local import SPLIT
from mnemo_cli.proc_cpu import TICK
from mnemo_context.handlers import ContextService

LINUX = Path("/proc/self/stat").exists()

BURN_S = 0.004
SERVER_S = 0.05  # a whole number of clock ticks at 100 or 1,000 a second


def _burn(seconds: float) -> None:
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


def _backend(proc: Path, pid: int, command: str, ticks: int) -> None:
    (proc / str(pid)).mkdir(exist_ok=True)
    (proc / str(pid) / "comm").write_text(f"{command}\n")
    rest = ["S", "1"] + ["0"] * 9 + [str(ticks), "0", "0", "0"] + ["0"] * 30
    (proc / str(pid) / "stat").write_text(f"{pid} ({command}) " + " ".join(rest) + "\n")


class _Spending(Backends):
    """Backends whose CPU grows as the calls burn it: the one in ``proc`` a fake /proc."""

    def __init__(self, proc: Path) -> None:
        super().__init__(proc)
        self.ticks = 0
        self.add(7)

    def spend(self, seconds: float) -> None:
        self.ticks += round(seconds * TICK)
        _backend(self._proc, 7, "postgres", self.ticks)


def test_the_backends_cpu_is_read_only_for_postgres_processes_here(tmp_path: Path) -> None:
    _backend(tmp_path, 11, "postgres", 250)
    _backend(tmp_path, 12, "python3", 900)  # the pid of another host's backend, here not one
    backends = Backends(tmp_path)
    for pid in (11, 12, 13):  # 13: exited
        backends.add(pid)
    assert backends.cpu() == {11: 250 / TICK}


async def test_each_call_is_timed_in_turns_and_its_cpu_counted(tmp_path: Path) -> None:
    order: list[str] = []
    server = _Spending(tmp_path)

    async def call(service: ContextService, ws: str, question: str) -> Any:
        order.append(ws)
        if ws == "big":
            _burn(BURN_S)
            server.spend(SERVER_S)
        return None

    spaces = {1_000: "small", 100_000: "big"}
    samples = 2 * TURN + 3
    got = await _time(cast(ContextService, None), spaces, call, samples, server)
    timed = order[2 * 10 :]  # after the warm-up, one call a size ten times
    assert timed[:TURN] == ["small"] * TURN and timed[TURN : 2 * TURN] == ["big"] * TURN
    assert timed.count("small") == timed.count("big") == samples
    big, small = got[100_000], got[1_000]
    assert big["p50_ms"] >= BURN_S * 1000 > small["p50_ms"]
    assert big["cpu_ms"]["reader"] >= 0.9 * BURN_S * 1000 > small["cpu_ms"]["reader"]
    assert big["cpu_ms"]["postgres"] == pytest.approx(SERVER_S * 1000)
    assert small["cpu_ms"]["postgres"] == 0.0


@pytest.mark.skipif(not LINUX, reason="reads /proc")
async def test_the_read_pool_plans_as_the_read_process_and_its_backends_cpu_is_read(
    pg_url: str,
) -> None:
    backends = Backends()
    pool = await read_pool(pg_url, backends)
    try:
        async with pool.connection() as conn:
            pid = (await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone())["pid"]
            # Planned as `mnemo up` has the read process's statements planned.
            mode = await (await conn.execute("SHOW plan_cache_mode")).fetchone()
            assert mode == {"plan_cache_mode": SPLIT["read"]["MNEMO_PG_PLAN_CACHE_MODE"]}
            before = backends.cpu()
            await conn.execute("SELECT count(*) FROM generate_series(1, 3000000)")
            after = backends.cpu()
    finally:
        await pool.close()
    assert pid in backends.pids and pid in before
    assert after[pid] > before[pid]  # the statement's CPU, on the backend that ran it


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
