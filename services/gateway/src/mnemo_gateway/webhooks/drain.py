"""``queue.empty``: a workspace's (or one session's) work queue just drained.

Whether a queue is empty is asked of one port, ``QueueProbe`` (today the queue status the
gateway serves); whether it *just became* empty is remembered here: a workspace is busy from the
moment a stage announces work of it (``mnemo.progress.<workspace>``, with the sessions the work
is in) until the probe finds no work pending or in progress; each session of it that had work
drains on its own. Checks run when a stage announces progress and when a projection announces
it applied more of the log (the queue status waits on both), and only for busy workspaces; a
slow re-check of the busy ones covers announcements lost (core NATS is at most once).

A workspace with no webhook endpoint has nobody to tell: it is forgotten without a queue status
(which reads every unit of the workspace, a tenth of a second of Postgres for 100,000 messages,
taken from the reads while memory forms). An endpoint registered while work is still announced
makes the next announcement watch the workspace again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from mnemo_gateway.routes.queue import work_units
from mnemo_gateway.store import ReadStore
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects
from mnemo_schema.progress import decode_note

log = get_logger("mnemo.webhooks")


# The key of the work that is in no session (a dream of a peer's whole representation).
OUTSIDE_SESSIONS = ""


class QueueProbe(Protocol):
    async def listened(self, workspace: str) -> bool:
        """Whether ``workspace`` has a webhook endpoint, to which a drain would be told."""
        ...

    async def outstanding(self, workspace: str) -> dict[str, tuple[int, int]]:
        """Per session of ``workspace``: (work units in all, units pending or in progress);
        under ``OUTSIDE_SESSIONS``, the work that is in no session."""
        ...


class StatusProbe:
    """The probe over the queue status (``routes.queue.work_units``); ``partition`` names the
    partition of the log a workspace is in."""

    def __init__(self, store: ReadStore, partition: Callable[[str], int]) -> None:
        self._store = store
        self._partition = partition

    async def listened(self, workspace: str) -> bool:
        row = await self._store.one(
            "SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE workspace = %s) AS listened",
            (workspace,),
        )
        return bool(row and row["listened"])

    async def outstanding(self, workspace: str) -> dict[str, tuple[int, int]]:
        status = await work_units(self._store, workspace, self._partition(workspace))
        out = {
            sid: (s.total_work_units, s.pending_work_units + s.in_progress_work_units)
            for sid, s in (status.sessions or {}).items()
        }
        total = status.total_work_units - sum(t for t, _ in out.values())
        left = status.pending_work_units + status.in_progress_work_units
        left -= sum(n for _, n in out.values())
        if total > 0:
            out[OUTSIDE_SESSIONS] = (total, max(left, 0))
        return out


@dataclass(frozen=True)
class Drained:
    """A queue that just drained (``session_id`` None: the whole workspace's), and how many
    work units it had seen by then (which names this drain: a replica noticing it too sends
    the same event id)."""

    workspace: str
    session_id: str | None
    total: int


class DrainWatch:
    """Which workspaces are busy, and which of their queues drained since the last check."""

    def __init__(self, probe: QueueProbe) -> None:
        self._probe = probe
        self._busy: dict[str, set[str]] = {}

    def touched(self, workspace: str, sessions: list[str]) -> None:
        """A stage announced work of ``workspace`` (in ``sessions``)."""
        self._busy.setdefault(workspace, set()).update(sessions)

    def busy(self) -> list[str]:
        return sorted(self._busy)

    async def check(self, workspace: str) -> list[Drained]:
        """The queues of ``workspace`` that drained since it was last seen busy."""
        before = self._busy.get(workspace)
        if before is None:
            return []
        if not await self._probe.listened(workspace):
            del self._busy[workspace]
            return []
        now = await self._probe.outstanding(workspace)
        active = {sid for sid, (_, left) in now.items() if left > 0}
        out = [
            Drained(workspace, sid, now.get(sid, (0, 0))[0])
            for sid in sorted(before - active)
            if sid != OUTSIDE_SESSIONS
        ]
        if active:
            self._busy[workspace] = active
        else:
            del self._busy[workspace]
            out.append(Drained(workspace, None, sum(total for total, _ in now.values())))
        return out


Notify = Callable[[Drained], Awaitable[None]]
# The projections the queue status reads: the stages' progress (entity projection), what memory
# formed, and the passages.
APPLIED = (
    subjects.PROJECTOR_APPLIED,
    subjects.MEMORY_PROJECTION_APPLIED,
    subjects.PASSAGES_APPLIED,
)


class DrainNotifier:
    """Runs ``DrainWatch`` on the bus's progress announcements; ``notify`` each drain."""

    def __init__(
        self,
        nc: NATS,
        watch: DrainWatch,
        notify: Notify,
        recheck_s: float = 2.0,
        busy_share: float = 0.2,
    ) -> None:
        self._nc = nc
        self._watch = watch
        self._notify = notify
        self._recheck_s = recheck_s
        # At most this share of the time goes to checks: a round of checks is followed by a
        # pause of (1 - share) / share times as long. Under a backlog, every batch a
        # projection applies announces itself, and the checks (a queue status each, tens of
        # milliseconds of Postgres for a large workspace) ran back to back, taking the cores
        # from the reads.
        self._pause = (1 - busy_share) / busy_share
        self._due: set[str] = set()
        self._wake = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        subs = [await self._nc.subscribe(subjects.PROGRESS_SUBJECTS, cb=self._on_progress)]
        subs += [await self._nc.subscribe(s, cb=self._on_applied) for s in APPLIED]
        try:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._recheck_s)
                self._wake.clear()
                due = self._due or set(self._watch.busy())
                self._due = set()
                began = time.monotonic()
                for workspace in sorted(due):
                    await self._check(workspace)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._pause * (time.monotonic() - began))
        finally:
            for sub in subs:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

    async def _check(self, workspace: str) -> None:
        try:
            for drained in await self._watch.check(workspace):
                await self._notify(drained)
        except Exception as err:  # Postgres or NATS away: the workspace stays busy
            log.warning("webhook.drain_check_failed", workspace=workspace, error=repr(err))

    async def _on_progress(self, msg: Msg) -> None:
        workspace = msg.subject.rsplit(".", 1)[-1]
        self._watch.touched(workspace, decode_note(msg.data))
        self._due.add(workspace)
        self._wake.set()

    async def _on_applied(self, _: Msg) -> None:
        self._due.update(self._watch.busy())
        self._wake.set()
