"""Reads being answered on this host, as a signal other processes' background work can wait on.

Priority decides which process runs, not what its running costs the others. On the 2-vCPU
virtual machine measured, get_context on a quiet stack answered in p50 14.2 / p99 22.0 ms with
the memory process stopped, and in 17.0 / 28.4 ms beside two busy loops at ``SCHED_IDLE`` (the
lowest priority Linux has, preempted by any other process that wakes): a busy vCPU makes every
wake-up on the host slower. With memory forming at idle priority, reads took 16-17 / 30-43 ms
against 14-15 / 20-23 ms with it stopped, and the same under 1,000 msg/s of writes (p99 36-48
against 27-30 ms). So a process doing background work waits, between its steps, while reads are
answered (``mnemo_runtime.precedence``); and on one host, the process answering them says so
here for the others.

The signal is a file of three 64-bit numbers shared by ``mmap``: the queries in flight, when
that count last changed (``CLOCK_MONOTONIC``, which every process of the host shares) and the
writer's pid. One process writes it (the one answering queries) and any number read it. A count
left by a writer that died answering is read as none once its pid is gone (a killed read
process had otherwise held back the memory process's backlog until a new one started), or after
``STALE_S`` without a change; the next writer starts it at zero.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import time
from collections.abc import Iterator
from pathlib import Path

from mnemo_runtime.stack import pid_alive

SIZE = 24
# A count unchanged this long is a dead writer's (a query takes seconds at most, a chat with a
# remote model a minute or two).
STALE_S = 300.0


class ReadsSignal:
    """The host's reads in flight, in the file at ``path`` (created if missing)."""

    def __init__(self, path: Path, *, writer: bool = False) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < SIZE:
                os.ftruncate(fd, SIZE)
            self._map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        # Aligned 8-byte stores and loads: a reader never sees half of a number.
        self._in_flight = ctypes.c_int64.from_buffer(self._map, 0)
        self._changed = ctypes.c_int64.from_buffer(self._map, 8)
        self._pid = ctypes.c_int64.from_buffer(self._map, 16)
        self.writer = writer
        self._mine = 0
        if writer:
            self._pid.value = os.getpid()
            self._set(0)

    def _set(self, in_flight: int) -> None:
        self._in_flight.value = in_flight
        self._changed.value = time.monotonic_ns()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Mark a read being answered, for as long as the block runs (writer only)."""
        if not self.writer:
            raise RuntimeError("only the process that answers the reads marks them")
        self._mine += 1
        self._set(self._mine)
        try:
            yield
        finally:
            self._mine -= 1
            self._set(self._mine)

    def busy(self, quiet_s: float) -> bool:
        """Whether a read is being answered, or one was less than ``quiet_s`` ago."""
        since = (time.monotonic_ns() - self._changed.value) / 1e9
        if since < quiet_s:
            return True
        return self._in_flight.value > 0 and since < STALE_S and _writer_alive(self._pid.value)

    def close(self) -> None:
        """Let go of the file (the numbers first: the map cannot close while they refer to it)."""
        del self._in_flight, self._changed, self._pid
        self._map.close()


def _writer_alive(pid: int) -> bool:
    """Whether the writer ``pid`` runs (0: none has written yet)."""
    return pid > 0 and pid_alive(pid)


def open_reads_signal(path: Path | None, *, writer: bool) -> ReadsSignal | None:
    """The signal at ``path``, or None without one (a process alone on its cores)."""
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return ReadsSignal(path, writer=writer)
