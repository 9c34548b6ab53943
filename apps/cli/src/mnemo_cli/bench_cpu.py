"""CPU time the local stack's processes spend, read from /proc (Linux; nothing elsewhere).

On shared cores a latency says as much about the neighbours as about Mnemo; the CPU seconds each
process spent on a piece of work say where its time went, whoever else ran meanwhile. Postgres
counts its server process, its live backends and the backends that have exited (reaped into
the server's children's time); ``Backends`` counts only those serving one pool, for a figure
per read.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemo_cli.local import processes
from mnemo_cli.proc_cpu import PROC, parse_stat, stat_fields
from mnemo_runtime.settings import InfraSettings


def _tree(root: int) -> float:
    """CPU seconds of ``root``, its reaped children and its live children."""
    mine = stat_fields(root)
    if mine is None:
        return 0.0
    _, own, reaped = parse_stat(mine)
    total = own + reaped
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (f := stat_fields(int(entry.name))) is not None:
            parent, child, _ = parse_stat(f)
            if parent == root:
                total += child
    return total


class Backends:
    """The Postgres backends serving one pool (each connection tells its backend's pid as it
    opens: ``open_pool``'s ``on_connect``), and the CPU seconds each has spent, from /proc when
    the server runs on this host: none of them is seen from another host's server."""

    def __init__(self, proc: Path = PROC) -> None:
        self.pids: set[int] = set()
        self._proc = proc

    def add(self, pid: int) -> None:
        self.pids.add(pid)

    def cpu(self) -> dict[int, float]:
        """Each backend's CPU seconds so far; a pid that is not a postgres process here is
        left out (a server elsewhere, or a backend that has exited)."""
        out: dict[int, float] = {}
        for pid in self.pids:
            try:
                command = (self._proc / str(pid) / "comm").read_text().strip()
            except OSError:
                continue
            if command == "postgres" and (fields := stat_fields(pid, self._proc)) is not None:
                out[pid] = parse_stat(fields)[1]
        return out


def backends_spent(before: Mapping[int, float], after: Mapping[int, float]) -> float:
    """CPU seconds the backends spent between two readings, a backend opened in between
    counting all its own."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def own_cpu() -> float:
    """CPU seconds of this process so far, all its threads (onnxruntime's among them)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stack_cpu(settings: InfraSettings) -> dict[str, float]:
    """CPU seconds so far of each running process of the local stack, and of this one."""
    if not PROC.exists():
        return {}
    out: dict[str, float] = {}
    for name, pid in processes(settings).items():
        if pid is None:
            continue
        if name == "postgres":
            out[name] = _tree(pid)
        elif (f := stat_fields(pid)) is not None:
            out[name] = parse_stat(f)[1]
    out["bench"] = own_cpu()
    return out


def spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds each process spent between two readings (those in both)."""
    return {k: round(after[k] - before[k], 2) for k in after if k in before}


class Meter:
    """What a piece of work cost: wall seconds, each process's CPU seconds, the host's load.

    With ``stack`` False (a deployed Mnemo, its processes elsewhere), only this process's."""

    def __init__(self, settings: InfraSettings, stack: bool = True) -> None:
        self._settings = settings
        self._stack = stack
        self._began = time.perf_counter()
        self._cpu = self._now()
        self._load = os.getloadavg()[0]

    def _now(self) -> dict[str, float]:
        return stack_cpu(self._settings) if self._stack else {"bench": own_cpu()}

    def read(self) -> dict[str, Any]:
        """The cost since this meter was made."""
        return {
            "seconds": round(time.perf_counter() - self._began, 2),
            "cpu_s": spent(self._cpu, self._now()),
            "host_load": [round(self._load, 2), round(os.getloadavg()[0], 2)],
        }


# The host probe's work: a fixed pure-Python loop, the same in every run and on every host,
# of about a read's time (20 ms on a 2-vCPU EPYC). The shorter the work, the wider its spread:
# there, with nothing else running, 4 ms of it took p99 / p50 1.7-2.2x, 20 ms 1.6x.
HOST_PROBE_STEPS = 300_000
# Its samples are this far apart, so that each starts from a wake-up, as a request does.
HOST_PROBE_GAP_S = 0.002


def fixed_work(steps: int = HOST_PROBE_STEPS) -> int:
    """The host probe's computation (its result, so that nothing can skip it)."""
    total = 0
    for i in range(steps):
        total += (i * i) % 7
    return total


async def host_probe(samples: int, steps: int = HOST_PROBE_STEPS) -> list[float]:
    """The milliseconds ``fixed_work`` took, ``samples`` times, each after a short sleep.

    Hosts and the same host from hour to hour differ by 20-40 % in speed, and in how much a
    fixed computation's time varies: the probe's p50 says how fast this host's cores are now,
    and its p99 / p50 how far the tail of any read stands above its median with nothing of
    Mnemo's own in it."""
    times = []
    for _ in range(samples):
        await asyncio.sleep(HOST_PROBE_GAP_S)
        began = time.perf_counter()
        fixed_work(steps)
        times.append((time.perf_counter() - began) * 1000)
    return times
