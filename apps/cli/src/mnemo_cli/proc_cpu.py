"""CPU time from /proc (Linux; nothing elsewhere): a process's, the host's, and whether a
background process is waiting for CPU that other work keeps.

The ``memory`` process of ``mnemo up`` runs at idle priority by default: it gets only the CPU time
no other process wants. On a host whose CPUs other programs keep busy (a build, a second stack,
a neighbour's batch job) it then gets next to nothing, and its queue shows work "in progress"
that barely moves. That is the setting doing what it says, not a stuck stage; ``mnemo status``
and the fault suite's report tell the two apart with the figures below.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# Below this share of one CPU, while the host's CPUs are at least BUSY busy, a background
# process with work to do is waiting for CPU, not working.
STARVED_CPU = 0.05
BUSY = 0.9


def stat_fields(pid: int, proc: Path = PROC) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (None: no such process)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields start after its last ")".
    return text.rsplit(")", 1)[1].split()


def parse_stat(fields: list[str]) -> tuple[int, float, float]:
    """(parent pid, own CPU seconds, reaped children's CPU seconds) from /proc/<pid>/stat's
    fields after the command name."""
    own = (int(fields[11]) + int(fields[12])) / TICK
    children = (int(fields[13]) + int(fields[14])) / TICK
    return int(fields[1]), own, children


def host_ticks(text: str) -> tuple[int, int]:
    """(busy, all) clock ticks of every CPU together, from /proc/stat's text: idle and I/O wait
    are not busy; steal (time the hypervisor gave another machine) is."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            ticks = [int(v) for v in parts[1:9]]  # user .. steal; guest time is inside user
            return sum(ticks) - ticks[3] - ticks[4], sum(ticks)
    raise ValueError("/proc/stat has no 'cpu' line")


@dataclass(frozen=True)
class Reading:
    """A process's CPU seconds and the host's ticks at one moment."""

    at: float
    process_s: float | None
    host_busy: int
    host_all: int


def read(pid: int, proc: Path = PROC) -> Reading | None:
    """Now's reading for ``pid`` (None where there is no /proc)."""
    try:
        busy, total = host_ticks((proc / "stat").read_text())
    except (OSError, ValueError):
        return None
    fields = stat_fields(pid, proc)
    own = parse_stat(fields)[1] if fields is not None else None
    return Reading(time.monotonic(), own, busy, total)


@dataclass(frozen=True)
class Share:
    """What a process got between two readings: CPUs' worth (1.0: one CPU all the time) and
    how busy the host's CPUs were (0-1, all of them together), over ``seconds``."""

    seconds: float
    process_cpus: float
    host_busy: float

    @property
    def starved(self) -> bool:
        """The process got next to nothing while the host had no CPU to spare."""
        return self.process_cpus < STARVED_CPU and self.host_busy >= BUSY

    def words(self) -> str:
        """'it had 1 % of a CPU over 300 s while the host's CPUs were 98 % busy'."""
        return (
            f"it had {self.process_cpus * 100:.0f} % of a CPU over {self.seconds:.0f} s"
            f" while the host's CPUs were {self.host_busy * 100:.0f} % busy"
        )


def share(before: Reading, after: Reading) -> Share | None:
    """What the process got between ``before`` and ``after`` (None: it was not there at both,
    or no time passed)."""
    seconds = after.at - before.at
    ticks = after.host_all - before.host_all
    if before.process_s is None or after.process_s is None or seconds <= 0 or ticks <= 0:
        return None
    busy = (after.host_busy - before.host_busy) / ticks
    return Share(seconds, max(0.0, after.process_s - before.process_s) / seconds, busy)


def priority(pid: int, proc: Path = PROC) -> str | None:
    """How the kernel weighs ``pid``: 'idle' (SCHED_IDLE), or 'niceness N', with its scheduling
    group's niceness where that is not 0 (None: no such process)."""
    try:
        idle = hasattr(os, "SCHED_IDLE") and os.sched_getscheduler(pid) == os.SCHED_IDLE
        own = "idle" if idle else f"niceness {os.getpriority(os.PRIO_PROCESS, pid)}"
    except OSError:
        return None
    group = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        # "/autogroup-123 nice 19"
        group = int((proc / str(pid) / "autogroup").read_text().split()[2])
    return own + (f", its scheduling group at niceness {group}" if group else "")


def memory_starved(got: Share, how: str | None) -> str:
    """Why the memory process is not getting on, for a person: its share, the host's, and what
    to set."""
    return (
        f"the memory process is waiting for CPU: {got.words()}; at its priority"
        + (f" ({how})" if how else "")
        + " it yields the CPUs to every other program (MNEMO_MEMORY_PRIORITY: a lower niceness,"
        " or normal, gives it a larger share)"
    )


def _since(pid: int, before: Reading | None, proc: Path) -> Share | None:
    """What ``pid`` got from ``before`` until now (None where that is not known)."""
    after = read(pid, proc) if before is not None else None
    return share(before, after) if before is not None and after is not None else None


def memory_since(pid: int, before: Reading | None, proc: Path = PROC) -> str:
    """What the memory process ``pid`` got since ``before``, in words ('' where that is not
    known), and why, when it was next to nothing on a busy host."""
    got = _since(pid, before, proc)
    if got is None:
        return ""
    if got.starved:
        return memory_starved(got, priority(pid, proc))
    return f"the memory process: {got.words()}"


def memory_lines(pid: int, seconds: float = 1.0, proc: Path = PROC) -> list[str]:
    """For ``mnemo status`` while memory is behind: what the memory process got over the next
    ``seconds``, and, when that is next to nothing on a busy host, why."""
    before = read(pid, proc)
    time.sleep(seconds)
    got = _since(pid, before, proc)
    if got is None:
        return []
    how = priority(pid, proc)
    lines = [
        f"cpu       memory {got.process_cpus * 100:.0f} % of a CPU over the last"
        f" {got.seconds:.0f} s, the host's CPUs {got.host_busy * 100:.0f} % busy"
        + (f" (priority: {how})" if how else "")
    ]
    if got.starved:
        lines.append(f"warning   {memory_starved(got, how)}")
    return lines
