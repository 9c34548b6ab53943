"""``mnemo chaos``: a conversation posted through the API while the stack is hurt, then checked.

On a stack of its own (``chaos_stack``), a long conversation is posted at a steady rate
(``chaos_load``). As the posting passes evenly spaced points, one fault at a time: each of
the local processes (api, projector, read, memory) is killed with SIGKILL and started again as
a supervisor would, nats-server is stopped and started again, Postgres is stopped and started
again. After each, the time until ``/ready`` answers 200 again is measured; the next fault waits
for that. Once everything is posted, with no hand on the keyboard, the run checks
(``chaos_checks``): every message acknowledged and stored exactly once, no observation twice,
the queue drained within a deadline, the processes alive through the broker and database
restarts, the reads answering and ``/ready`` 200 at the end; it prints the report and exits
non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from mnemo_cli.chaos_checks import (
    Fault,
    Report,
    check_consumers,
    check_messages,
    check_observations,
    check_ready,
    drain,
)
from mnemo_cli.chaos_load import Conversation, Poster, conversation
from mnemo_cli.chaos_stack import PROCESSES, ChaosStack, StackFailed

FAULTS = (*(f"kill {p}" for p in PROCESSES), "restart nats", "restart postgres")
Say = Callable[[str], None]


@dataclass(frozen=True)
class ChaosConfig:
    """The size and pace of a run."""

    state: Path
    messages: int = 10_000
    rate: float = 50.0  # messages per second, overall
    workers: int = 4  # sessions posted at the same time
    outage_s: float = 2.0  # how long nats-server and Postgres stay down
    recovery_s: float = 180.0  # how long a fault may keep /ready from answering 200
    drain_s: float = 900.0  # how long the queue may take to drain after the posting
    keep: bool = False  # leave the stack running afterwards


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``mnemo chaos`` and its options."""
    d = ChaosConfig(Path())
    p.add_argument("--messages", type=int, default=d.messages, help="how many to post")
    p.add_argument("--rate", type=float, default=d.rate, help="messages per second")
    p.add_argument("--workers", type=int, default=d.workers, help="sessions posted at once")
    p.add_argument(
        "--outage", type=float, default=d.outage_s, help="seconds NATS / Postgres stay down"
    )
    p.add_argument(
        "--recovery-timeout",
        type=float,
        default=d.recovery_s,
        help="seconds a fault may keep /ready from answering 200",
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=d.drain_s,
        help="seconds the queue may take to drain after the posting",
    )
    p.add_argument("--state-dir", type=Path, help="default: $MNEMO_STATE_DIR/chaos (emptied first)")
    p.add_argument("--keep", action="store_true", help="leave the stack running afterwards")


def main(args: argparse.Namespace, state_dir: Path) -> int:
    """Run ``mnemo chaos``; the exit status (0: every check passed)."""
    config = ChaosConfig(
        state=args.state_dir or state_dir / "chaos",
        messages=args.messages,
        rate=args.rate,
        workers=args.workers,
        outage_s=args.outage,
        recovery_s=args.recovery_timeout,
        drain_s=args.drain_timeout,
        keep=args.keep,
    )
    # Stopped from outside (Ctrl-C, SIGTERM): the stack is stopped too.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        report = asyncio.run(run(config, os.environ))
    except KeyboardInterrupt:
        ChaosStack(config.state.resolve(), dict(os.environ)).down()
        print(f"interrupted; the stack under {config.state} is stopped", flush=True)
        return 130
    print(report.render(), flush=True)
    return 0 if report.ok else 1


def _printer(started: float) -> Say:
    def say(text: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {text}", flush=True)

    return say


async def run(config: ChaosConfig, environ: Mapping[str, str], say: Say | None = None) -> Report:
    """One fault run on a stack of its own; the report."""
    say = say or _printer(time.monotonic())
    stack = ChaosStack.fresh(config.state, environ)
    workspace = f"chaos-{int(time.time())}"
    conv = conversation(workspace, config.messages)
    report = Report(conv.count, conv.source, workspace)
    say(f"starting a stack under {stack.state} (gateway {stack.url})")
    try:
        started = time.monotonic()
        await asyncio.to_thread(stack.up)
        report.figures["stack started in"] = f"{time.monotonic() - started:.1f} s"
        headers = {"Authorization": f"Bearer {stack.admin_key()}"}
        async with httpx.AsyncClient(base_url=stack.url, headers=headers, timeout=30) as client:
            await _exercise(stack, client, _poster(client, conv, config), report, config, say)
    except StackFailed as err:
        report.check("the stack runs", False, f"{err}; see {stack.state / 'logs'}")
    finally:
        if not config.keep:
            await asyncio.to_thread(stack.down)
    report.figures["logs"] = str(stack.state / "logs")
    return report


def _poster(client: httpx.AsyncClient, conv: Conversation, config: ChaosConfig) -> Poster:
    """The client that posts ``conv`` at the run's pace, giving up on nothing before a deadline
    well past the posting's expected end."""
    expected = conv.count / config.rate
    deadline = time.monotonic() + 2 * expected + len(FAULTS) * config.recovery_s
    return Poster(client, conv, config.rate, config.workers, deadline)


async def _exercise(
    stack: ChaosStack,
    client: httpx.AsyncClient,
    poster: Poster,
    report: Report,
    config: ChaosConfig,
    say: Say,
) -> None:
    await poster.setup()
    n = poster.conversation.count
    say(
        f"posting {n:,} messages in {len(poster.conversation.sessions):,} sessions"
        f" at {config.rate:g} msg/s ({poster.conversation.source})"
    )
    t0 = time.monotonic()
    posting = asyncio.create_task(poster.run())
    progress = asyncio.create_task(_progress(poster, t0, say))
    # The faults come at evenly spaced points of the posting, one at a time, each once the
    # stack is back from the one before. The posting runs at most one stretch ahead of them,
    # so that on a slow machine too every fault comes while messages are being posted.
    stretch = n / (len(FAULTS) + 1)
    try:
        for k, name in enumerate(FAULTS):
            await poster.hold(round(stretch * (k + 2)))
            await poster.reached(round(stretch * (k + 1)))
            fault = await _inject(stack, client, name, poster, t0, config, say)
            report.faults.append(fault)
        await poster.hold(n)
        await posting
    finally:
        progress.cancel()
    took = time.monotonic() - t0
    report.figures["posting took"] = f"{took:.1f} s ({len(poster.acknowledged) / took:.1f} msg/s)"
    retries = ", ".join(f"{k} x{v}" for k, v in poster.retries.most_common()) or "none"
    report.figures["client retries"] = retries
    report.figures["slowest acknowledgement"] = f"{poster.slowest_s:.1f} s"
    _check_faults(report)
    say("posting done; waiting for the queue to drain")
    dsn = stack.database_url
    await drain(
        report,
        poster.conversation.workspace,
        dsn,
        client,
        config.drain_s,
        say,
        memory_pid=stack.pids().get("memory"),
    )
    await check_messages(report, poster, dsn, client)
    await check_observations(report, poster.conversation.workspace, dsn)
    await _check_reads(report, client, poster)
    await check_consumers(report, stack.nats_url, say)
    await check_ready(report, client, stack.url)


async def _progress(poster: Poster, t0: float, say: Say) -> None:
    last, at = 0, t0
    while True:
        await asyncio.sleep(5.0)  # the interval between two progress lines
        now, acked = time.monotonic(), len(poster.acknowledged)
        say(
            f"{acked:,}/{poster.conversation.count:,} acknowledged"
            f" ({(acked - last) / (now - at):.0f} msg/s), {sum(poster.retries.values())} retries"
        )
        last, at = acked, now


async def _inject(
    stack: ChaosStack,
    client: httpx.AsyncClient,
    name: str,
    poster: Poster,
    t0: float,
    config: ChaosConfig,
    say: Say,
) -> Fault:
    """Do fault ``name``, bring the stack back as a supervisor would, time the recovery."""
    start = time.monotonic()
    fault = Fault(name, start - t0, len(poster.acknowledged))
    before = stack.pids()
    kind, what = name.split(" ", 1)
    if kind == "kill" and what not in before:
        fault.skipped, fault.note = True, f"no {what} process in this layout"
        return fault
    if kind == "restart" and (stack.external_nats if what == "nats" else stack.external_database):
        variable = "NATS_URL" if what == "nats" else "DATABASE_URL"
        fault.skipped, fault.note = True, f"{variable} points at an external server"
        say(f"{name}: skipped ({fault.note})")
        return fault
    if kind == "kill":
        fault.note = f"pid {stack.kill(what)}"
        say(f"SIGKILL {what} ({fault.note}); starting it again with `mnemo up`")
        await _supervise(stack, start + config.recovery_s)
    else:
        say(f"stopping {what}, {config.outage_s:g} s down, starting it again")
        restart = stack.restart_nats if what == "nats" else stack.restart_postgres
        await asyncio.to_thread(restart, config.outage_s)
    fault.ready_after_s, fault.waited_on = await _until_ready(
        stack, client, start, config.recovery_s
    )
    fault.died = sorted(n for n, pid in before.items() if n != what and stack.pids().get(n) != pid)
    if fault.died:
        # A process that a broker or database restart ends is a failure of its own; it is
        # started again so that the run goes on.
        await _supervise(stack, time.monotonic() + config.recovery_s)
    back = "never" if fault.ready_after_s is None else f"after {fault.ready_after_s:.1f} s"
    say(f"{name}: ready again {back}" + (f" (died: {', '.join(fault.died)})" if fault.died else ""))
    return fault


async def _supervise(stack: ChaosStack, deadline: float) -> None:
    """``mnemo up`` until it succeeds or ``deadline`` passes (a supervisor tries again)."""
    while True:
        try:
            await asyncio.to_thread(stack.up)
            return
        except StackFailed:
            if time.monotonic() > deadline:
                return


async def _until_ready(
    stack: ChaosStack, client: httpx.AsyncClient, since: float, timeout: float
) -> tuple[float | None, list[str]]:
    """Seconds from ``since`` until /ready answers 200 (None if ``timeout`` passes first), and
    the problems it named meanwhile (or how it failed to answer), in the order first seen."""
    seen: list[str] = []
    while True:
        ok, said = await stack.ready(client)
        now = time.monotonic()
        if ok:
            return now - since, seen
        seen += [p for p in _problems(said) if p not in seen]
        if now - since > timeout:
            return None, seen
        await asyncio.sleep(0.1)  # the interval between two readiness probes


def _problems(said: str) -> list[str]:
    """The problems a 503 from /ready names; else what came instead (no answer, say)."""
    try:
        return [str(p) for p in json.loads(said)["problems"]]
    except (ValueError, KeyError, TypeError):
        return [said.split("(", 1)[0][:60]]


def _check_faults(report: Report) -> None:
    done = [f for f in report.faults if not f.skipped]
    slow = [f.name for f in done if f.ready_after_s is None]
    report.check(
        "every fault recovered from",
        len(report.faults) == len(FAULTS) and not slow,
        f"{len(done)} faults done, {len(report.faults) - len(done)} skipped;"
        f" /ready never 200 again after: {', '.join(slow) or 'none'}",
    )
    died = [f"{f.name} ended {', '.join(f.died)}" for f in done if f.died]
    report.check(
        "every process survived the broker and database restarts",
        not died,
        "; ".join(died) or "no process died",
    )


async def _check_reads(report: Report, client: httpx.AsyncClient, poster: Poster) -> None:
    """The read path answers at the end: a search of the workspace, a session's context."""
    ws = poster.conversation.workspace
    session = next(iter(poster.conversation.sessions))
    search = await client.post(f"/v3/workspaces/{ws}/search", json={"query": "family"})
    context = await client.get(
        f"/v3/workspaces/{ws}/sessions/{session}/context", params={"search_query": "family"}
    )
    report.check(
        "the reads answer at the end",
        search.status_code == 200 and context.status_code == 200,
        f"search: HTTP {search.status_code}, context: HTTP {context.status_code}",
    )
