"""A process's CPU priority where the kernel weighs it: its scheduling group."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from mnemo_runtime.logging import get_logger

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


# A backend of a local Postgres: the process name every postgres process has, whatever its role.
POSTGRES_COMM = "postgres"


class BackendPriority:
    """Gives the Postgres backends serving this process's connections ``niceness`` (and, with
    ``idle``, the SCHED_IDLE policy), on a Postgres that runs on this host (``mnemo up`` asks it
    of the memory process when it started Postgres itself).

    A background process's reads and writes are carried out by its backends, which run at the
    server's priority, not the client's: while memory formed, the memory process's backends took
    about a third of a core at normal priority, in competition with the reads', although the
    process itself ran at idle priority. Each Postgres backend leads a session of its own, so
    the kernel weighs it as a scheduling group of its own (see ``AUTOGROUP``): that group's
    niceness, and the backend's, are set.

    Niceness 19 still left the backends a share: a nice-0 task that wakes takes the core from
    a nice-19 one only once the latter has had its slice. Under SCHED_IDLE it takes it at once,
    as it does from the memory process itself. With 1,000 msg/s posted and memory forming, a
    get_context's p50 / p99 were 14.0-16.4 / 27.8-33.3 ms with the memory process's backends
    under SCHED_IDLE against 16.6-18.5 / 34.4-36.0 ms at niceness 19 alone (alternating runs),
    and 28.5-29.5 ms at the tail with the memory process stopped.

    Backends that join before ``start`` wait for it, as the process's own group does (a
    background process whose work yields from the first instant may take minutes to start on
    busy cores); from then on each is reniced as its connection opens, and none is kept. A pid
    that is not a local postgres process, or one it may not renice, is left alone, logged once.
    """

    def __init__(self, niceness: int | None, idle: bool = False) -> None:
        self.niceness = niceness
        self.idle = idle and hasattr(os, "SCHED_IDLE")
        self._waiting: list[int] | None = []  # None once started
        self._refused = False

    @property
    def _active(self) -> bool:
        return self.niceness is not None or self.idle

    def joined(self, pid: int) -> None:
        """A connection of this process is served by backend ``pid``."""
        if not self._active:
            return
        if self._waiting is not None:
            self._waiting.append(pid)
        else:
            self._renice(pid)

    def start(self) -> None:
        """Renice the backends that joined so far, and every one that joins from now on."""
        if not self._active or self._waiting is None:
            return
        waiting, self._waiting = self._waiting, None
        for pid in waiting:
            self._renice(pid)

    def _renice(self, pid: int) -> None:
        proc = Path(f"/proc/{pid}")
        try:
            if (proc / "comm").read_text().strip() != POSTGRES_COMM:
                self._left_alone(pid, "not a local postgres process")
                return
            if self.idle:
                os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
            if self.niceness is None:
                return
            os.setpriority(os.PRIO_PROCESS, pid, self.niceness)
            if os.getsid(pid) == pid:  # its group is its own: renicing it touches no other
                with contextlib.suppress(FileNotFoundError):  # a kernel without autogroups
                    (proc / "autogroup").write_text(str(self.niceness))
        except FileNotFoundError:
            pass  # the backend has gone (its connection closed)
        except OSError as err:
            self._left_alone(pid, str(err))

    def _left_alone(self, pid: int, why: str) -> None:
        if not self._refused:
            self._refused = True
            get_logger("mnemo.priority").warning(
                "priority.backend_left_alone",
                pid=pid,
                niceness=self.niceness,
                idle=self.idle,
                error=why,
            )
