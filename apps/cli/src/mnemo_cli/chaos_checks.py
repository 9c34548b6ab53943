"""What a fault run checks once its load is posted, and the report it prints.

Every check reads the stack as a user could, or its tables directly: the messages table and
the list API (each acknowledged message there exactly once), the memory tables (no observation
twice), the queue status (drained: nothing pending or in progress, every unit completed or
failed with its reason), ``/ready``.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import nats
import psycopg
from psycopg.rows import dict_row

from mnemo_cli import proc_cpu
from mnemo_cli.chaos_load import MARKER, Poster
from mnemo_runtime.streams import READ_CONSUMER_THRESHOLD_S
from mnemo_schema import subjects


@dataclass
class Fault:
    """One fault done to the stack, and how the stack came back from it."""

    name: str
    at_s: float  # since posting began
    acknowledged: int  # messages acknowledged when it was done
    ready_after_s: float | None = None  # until /ready answered 200 again; None: it never did
    note: str = ""
    skipped: bool = False
    # Processes other than the one killed that were gone after it (started again).
    died: list[str] = field(default_factory=list)
    # What /ready named as its problems until it answered 200.
    waited_on: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Report:
    messages: int
    source: str
    workspace: str
    faults: list[Fault] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))

    def render(self) -> str:
        """The report as printed."""
        lines = [
            f"Fault run: {self.messages:,} messages of {self.source}, workspace {self.workspace}"
        ]
        lines += [f"  {k:<28} {v}" for k, v in self.figures.items()]
        lines.append("Faults (time since posting began; until /ready answered 200 again):")
        for f in self.faults:
            if f.skipped:
                lines.append(f"  {'':>8}  {f.name:<20} skipped: {f.note}")
                continue
            back = "never" if f.ready_after_s is None else f"{f.ready_after_s:6.1f} s"
            notes = [f.note] if f.note else []
            notes += [f"died: {', '.join(f.died)}"] if f.died else []
            notes += [f"/ready named: {', '.join(f.waited_on)}"] if f.waited_on else []
            note = f"  ({'; '.join(notes)})" if notes else ""
            lines.append(
                f"  {f.at_s:7.1f}s  {f.name:<20} after {f.acknowledged:>6,} acknowledged,"
                f" ready again after {back}{note}"
            )
        lines.append("Checks:")
        for c in self.checks:
            lines.append(f"  [{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}")
        lines.append(f"Result: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)


def _sample(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + (f", ... ({len(items)} in all)" if len(items) > n else "")


async def _rows(dsn: str, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(dsn, row_factory=dict_row) as conn:
        return await (await conn.execute(sql, params)).fetchall()


async def check_messages(
    report: Report, poster: Poster, dsn: str, client: httpx.AsyncClient
) -> None:
    """Every message acknowledged, and each acknowledged one stored exactly once."""
    count = poster.conversation.count
    report.check(
        "every message acknowledged",
        len(poster.acknowledged) == count,
        f"{len(poster.acknowledged):,} of {count:,} acknowledged (HTTP 2xx)"
        + (f"; refused: {_sample(poster.refused)}" if poster.refused else ""),
    )
    ws = poster.conversation.workspace
    rows = await _rows(
        dsn,
        "SELECT metadata ->> %s AS marker, count(*) AS n FROM messages WHERE workspace = %s"
        " GROUP BY 1",
        (MARKER, ws),
    )
    stored = {r["marker"]: int(r["n"]) for r in rows}
    missing = sorted(m for m in poster.acknowledged if m not in stored)
    twice = sorted(m for m, n in stored.items() if n > 1)
    report.check(
        "acknowledged messages stored exactly once (messages table)",
        not missing and not twice,
        f"{len(stored):,} markers stored; lost: {_sample(missing) or 'none'};"
        f" stored more than once: {_sample(twice) or 'none'}",
    )
    listed: Counter[str] = Counter()
    for sid in poster.conversation.sessions:
        page = 1
        while True:
            r = await client.post(
                f"/v3/workspaces/{ws}/sessions/{sid}/messages/list",
                params={"page": page, "size": 100},
            )
            r.raise_for_status()
            body = r.json()
            listed.update(m["metadata"].get(MARKER, "") for m in body["items"])
            if page >= body["pages"]:
                break
            page += 1
    missing = sorted(m for m in poster.acknowledged if listed[m] == 0)
    twice = sorted(m for m, n in listed.items() if n > 1)
    report.check(
        "acknowledged messages listed exactly once (list API)",
        not missing and not twice,
        f"{sum(listed.values()):,} listed; lost: {_sample(missing) or 'none'};"
        f" listed more than once: {_sample(twice) or 'none'}",
    )


async def check_observations(report: Report, workspace: str, dsn: str) -> None:
    """No observation twice: same observer, observed, content and source messages."""
    rows = await _rows(
        dsn,
        "SELECT observer, observed, content, source_message_ids, count(*) AS n FROM observations"
        " WHERE workspace = %s AND deleted_at IS NULL GROUP BY 1, 2, 3, 4 HAVING count(*) > 1",
        (workspace,),
    )
    total = await _rows(
        dsn,
        "SELECT count(*) AS n, coalesce(sum(times_derived), 0) AS derived FROM observations"
        " WHERE workspace = %s AND deleted_at IS NULL",
        (workspace,),
    )
    twice = [f"{r['observer']}/{r['observed']} {r['content'][:40]!r} x{r['n']}" for r in rows]
    report.check(
        "no duplicate observation",
        not rows,
        f"{int(total[0]['n']):,} observations (derived {int(total[0]['derived']):,} times);"
        f" duplicated: {_sample(twice) or 'none'}",
    )


async def drain(
    report: Report,
    workspace: str,
    dsn: str,
    client: httpx.AsyncClient,
    deadline_s: float,
    say: Callable[[str], None],
    memory_pid: int | None = None,
) -> None:
    """Wait (up to ``deadline_s``) until the queue has nothing pending or in progress. If it
    does not, the check says what CPU the memory process (``memory_pid``) got meanwhile: next
    to nothing on a host other work keeps busy is its idle priority at work, not a stuck unit."""
    before = proc_cpu.read(memory_pid) if memory_pid else None
    started = time.monotonic()
    last_said = 0.0
    status: dict[str, Any] = {}
    drained = False
    while time.monotonic() - started < deadline_s:
        r = await client.get(f"/v3/workspaces/{workspace}/queue/status")
        if r.status_code == 200:
            status = r.json()
            if not status["pending_work_units"] and not status["in_progress_work_units"]:
                drained = True
                break
        now = time.monotonic()
        if now - last_said >= 10:
            last_said = now
            say(f"queue: {_units(status)}")
        await asyncio.sleep(1.0)  # the interval between two looks at the queue
    took = time.monotonic() - started
    report.figures["queue drained after"] = f"{took:.1f} s" if drained else "never"
    letters = await _rows(
        dsn,
        "SELECT stage, reason, count(*) AS n FROM dead_letters WHERE status <> 'redriven'"
        " AND (workspace = %s OR workspace IS NULL) GROUP BY 1, 2 ORDER BY 3 DESC",
        (workspace,),
    )
    reasons = [f"{r['stage']} x{r['n']}: {str(r['reason'])[:120]}" for r in letters]
    failed = int(status.get("failed_work_units", 0))
    settled = status.get("completed_work_units", 0) + failed == status.get("total_work_units", -1)
    unexplained = (failed > 0 and not letters) or any(not r["reason"] for r in letters)
    cpu = proc_cpu.memory_since(memory_pid, before) if memory_pid and not drained else ""
    report.check(
        "the queue drains",
        drained and settled and not unexplained,
        _units(status)
        + (f" after {took:.0f} s" if drained else f" when the {deadline_s:.0f} s deadline passed")
        + (f"; dead letters: {'; '.join(reasons[:5])}" if reasons else "")
        + (f"; {cpu}" if cpu else ""),
    )


def _units(status: dict[str, Any]) -> str:
    """A queue status in words."""
    kinds = ("total", "completed", "failed", "in_progress", "pending")
    n = {k: int(status.get(f"{k}_work_units", 0)) for k in kinds}
    return (
        f"{n['completed']:,} of {n['total']:,} units completed, {n['failed']:,} failed,"
        f" {n['in_progress']:,} in progress, {n['pending']:,} pending"
    )


async def check_consumers(report: Report, nats_url: str, say: Callable[[str], None]) -> None:
    """No read's consumer left on the event stream once those of killed readers have expired.
    A read of stored events makes a pull consumer of its own, neither durable nor pushing
    (``mnemo_runtime.streams``), and deletes it when read; ones left behind had filled the
    server's limit on consumers."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        deadline = time.monotonic() + READ_CONSUMER_THRESHOLD_S + 10.0
        while True:
            found = await js.consumers_info(subjects.STREAM)
            left = [
                c.name for c in found if not c.config.durable_name and not c.config.deliver_subject
            ]
            # A read may be under way at any moment: a couple at once is no leak.
            if len(left) <= 2 or time.monotonic() > deadline:
                break
            say(
                f"{len(left)} reads' consumers on the stream; waiting for killed readers' to expire"
            )
            await asyncio.sleep(2.0)
    finally:
        await nc.close()
    report.check(
        "no read's consumer left behind",
        len(left) <= 2,
        f"{len(found)} consumers on {subjects.STREAM}, {len(left)} of them reads' own"
        + (f": {_sample(left)}" if left else ""),
    )


async def check_ready(report: Report, client: httpx.AsyncClient, url: str) -> None:
    """``/ready`` 200 at the end."""
    try:
        r = await client.get(f"{url}/ready", timeout=10)
        ok, said = r.status_code == 200, f"HTTP {r.status_code} {r.text[:300]}"
    except httpx.HTTPError as err:
        ok, said = False, repr(err)
    report.check("/ready 200 at the end", ok, said)
