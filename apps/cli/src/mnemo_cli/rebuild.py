"""``mnemo rebuild``: drop a projection's tables and rebuild them by replaying the log.

Without options: the entity and message tables. ``--memory``: what memory formation projects
(observations with their provenance and vectors, peer cards, summaries, dreams, message
passages and their word postings); the memory projection's output depends on the log alone,
so the replay reaches the same state. A running stack's projectors notice the reset and replay;
without one, the replay runs here.

A replay of a large log takes minutes (a memory replay embeds every passage again), so its
progress is written to stderr as it goes: the events to apply once the tables are dropped, then
every ``every_s`` the events applied, the rate and what is left at that rate. Writes that arrive
meanwhile are applied too, and counted among those left.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TextIO

from mnemo_cli.local import _paths, running
from mnemo_projector.app import build_app, build_memory, build_passages
from mnemo_projector.partitioned import ProjectionGroup
from mnemo_projector.settings import ProjectorSettings
from mnemo_projector.tables import drop_memory, drop_projection
from mnemo_runtime.bus import stream_last_seq
from mnemo_runtime.infra import Infra, open_infra
from mnemo_runtime.logging import get_logger
from mnemo_runtime.memory.wiring import MemorySettings, open_memory
from mnemo_runtime.settings import InfraSettings

log = get_logger("mnemo.rebuild")

# How often a replay reports its progress.
PROGRESS_EVERY_S = 5.0


async def rebuild(
    settings: InfraSettings,
    memory: bool = False,
    every_s: float = PROGRESS_EVERY_S,
    out: TextIO = sys.stderr,
) -> None:
    """Reset the read models; replay here unless a running projector picks the reset up,
    writing the replay's progress to ``out`` every ``every_s``."""
    nats, pg, _ = _paths(settings.state_dir)
    infra = await open_infra(
        settings.nats() or nats.url,
        settings.database_url or pg.url(),
        "mnemo-rebuild",
        partitions=settings.partitions,
    )
    ps = ProjectorSettings()
    adapters = None
    try:
        args = (ps, infra.nc, infra.js, infra.pool)
        if memory:
            ms = MemorySettings()
            adapters = await open_memory(ms, settings.state_dir.resolve(), infra.pool)
            groups = [
                build_memory(*args, adapters, infra.partitions, ms.near_duplicate_distance),
                build_passages(*args, adapters, infra.partitions),
            ]
        else:
            groups = [build_app(*args, infra.partitions)]
        for group in groups:
            await group.setup()
        head = await stream_last_seq(infra.js)
        async with infra.pool.connection() as conn:
            if memory:
                assert adapters is not None
                await drop_memory(conn, adapters.index)
            else:
                await drop_projection(conn)
        started = time.monotonic()
        what = "memory" if memory else "entity and message"
        total = await _left(infra, groups)
        print(f"rebuild: replaying the {what} projections: {total:,} events", file=out, flush=True)
        replayed = asyncio.Event()
        report = asyncio.create_task(
            report_progress(lambda: _left(infra, groups), total, started, every_s, out, replayed)
        )
        try:
            if running(settings):
                # The running projectors notice the reset and replay; wait for them.
                applied = total
                await _caught_up(infra, groups)
            else:
                applied = sum([await g.catch_up(infra.partitions) for g in groups])
        finally:
            replayed.set()
            report.cancel()
            await asyncio.gather(report, return_exceptions=True)
        print(
            f"replayed the {what} projections: {applied} events of the {head} in the log,"
            f" in {time.monotonic() - started:.1f}s"
        )
    finally:
        if adapters is not None:
            await adapters.close()
        await infra.close()


async def _left(infra: Infra, groups: list[ProjectionGroup]) -> int:
    """Events some partition of ``groups`` has yet to apply (from the stored positions)."""
    return sum([await g.pending_everywhere(infra.partitions) for g in groups])


async def _caught_up(infra: Infra, groups: list[ProjectionGroup]) -> None:
    """Until no partition of ``groups`` has events left to apply."""
    while await _left(infra, groups) > 0:
        await asyncio.sleep(0.2)


async def report_progress(
    count_left: Callable[[], Awaitable[int]],
    total: int,
    started: float,
    every_s: float,
    out: TextIO,
    done: asyncio.Event,
) -> None:
    """Every ``every_s``, until ``done`` is set: a line of the replay's progress on ``out``,
    from the events ``count_left`` says are left of ``total`` (a count that cannot be read
    then, the bus or the database away a moment, is skipped: the replay retries on its own).

    ``done`` is looked at after every count, not only while waiting: a cancellation can be
    lost inside a count (Python 3.11's ``asyncio.wait_for``, under nats-py's ``next_msg``,
    returns the message that arrived as it was cancelled), and a reporter that only a
    cancellation could stop then kept the replay from ever returning."""
    while not done.is_set():
        try:
            await asyncio.wait_for(done.wait(), every_s)
            return
        except TimeoutError:
            pass
        try:
            left = await count_left()
        except Exception as err:
            log.warning("rebuild.progress_unread", error=repr(err))
            continue
        if done.is_set():
            return
        line = progress_line(total, left, time.monotonic() - started)
        print(f"rebuild: {line}", file=out, flush=True)


def progress_line(total: int, left: int, elapsed_s: float) -> str:
    """Of ``total`` events to apply, ``left`` still to do after ``elapsed_s``: how many are
    applied, the rate, and at that rate how long the rest takes. Events written meanwhile
    count among those left (so the share applied may fall back)."""
    done = max(0, total - left)
    whole = max(total, done + left)
    share = 100.0 * done / whole if whole else 100.0
    line = f"{done:,} of {whole:,} events applied ({share:.0f}%)"
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    if left <= 0:
        return line
    if rate <= 0:
        return f"{line}, none yet"
    return f"{line}, {rate:,.0f} events/s, about {duration(left / rate)} left"


def duration(seconds: float) -> str:
    """``seconds`` for a person: 45 s, 3 min 20 s, 2 h 5 min."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min" if s % 3600 // 60 else f"{s // 3600} h"
