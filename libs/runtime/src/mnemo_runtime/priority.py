"""A process's CPU priority where the kernel weighs it: its scheduling group."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

# Linux's autogroups: a process that starts a session gets a scheduling group of its own, and
# the scheduler shares the CPU between groups before it looks at the policy or niceness of the
# tasks inside one. A SCHED_IDLE (or niced) process alone in its group therefore takes as much
# CPU as any other: two processes spinning on one core, each leading a session, one SCHED_IDLE,
# got 1.02 CPU seconds each; with the idle one's group at niceness 19, 1.16 against 0.02.
AUTOGROUP = Path("/proc/self/autogroup")


def group_niceness(niceness: int | None) -> None:
    """Give this process's scheduling group ``niceness`` (None: leave it), when the process
    leads a session (the group is then its own, not its parent's) and the kernel has
    autogroups."""
    if niceness is None or os.getsid(0) != os.getpid():
        return
    with contextlib.suppress(OSError):  # a kernel without autogroups
        AUTOGROUP.write_text(str(niceness))
