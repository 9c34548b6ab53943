"""A backlog larger than what the deriver's durable delivers unacknowledged does not hold back
another workspace of its partition, and a deriver killed while it reads a backlog again loses
none of it (real JetStream, Postgres and deriver processes).

The durable of a partition delivers at most ``max_ack_pending`` messages unacknowledged (40
here, 20,000 by default). Without letting a workspace's messages past its share go, the 300
messages posted to one workspace would keep a neighbour's message, posted after them, from
being delivered until 260 of them were derived.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import nats
import psycopg

from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.infra import open_infra
from mnemo_runtime.stack import LocalNats, free_port
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, Representation, decode_event
from mnemo_schema.observations import ObservationWritten

from .conftest import neighbour, new_database

BACKLOG = "gap-a"
HOLD = 40  # the durable's max_ack_pending; a workspace's share is half of it
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _said(workspace: str, i: int) -> MessagePosted:
    return MessagePosted(
        workspace=workspace,
        session_id="s",
        message_id=f"m{i}",
        peer_id="ann",
        content=f"I like tea number {i}.",
        metadata={},
        created_at=T0 + timedelta(seconds=i),
        token_count=6,
        representations=[Representation(observer="ann", observed="ann")],
    )


async def _post(url: str, db: str, events: list[MessagePosted]) -> list[int]:
    infra = await open_infra(url, db, "gaps-post")
    try:
        return await EventPublisher(infra.js).publish(events)
    finally:
        await infra.close()


async def _observations(url: str) -> list[tuple[int, ObservationWritten]]:
    nc = await nats.connect(url)
    try:
        stored = await read_stored(nc.jetstream(), subjects.STREAM, subjects.observation_filter())
    finally:
        await nc.close()
    out = []
    for s in stored:
        e = decode_event(s.data)
        if isinstance(e, ObservationWritten):
            out.append((s.seq, e))
    return out


def _cited(obs: list[tuple[int, ObservationWritten]], workspace: str) -> Counter[int]:
    return Counter(s for _, e in obs if e.workspace == workspace for s in e.source_message_seqs)


def _gaps(db: str) -> dict[str, int]:
    with psycopg.connect(db) as conn:
        return dict(conn.execute("SELECT workspace, position FROM deriver_gaps").fetchall())


class Derivers:
    """Deriver processes on one NATS and database."""

    def __init__(self, tmp: Path, url: str, db: str) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {
            **os.environ,
            "NATS_URL": url,
            "DATABASE_URL": db,
            "MNEMO_MIGRATE_ON_START": "false",
            "MNEMO_DERIVER_MAX_ACK_PENDING": str(HOLD),
        }

    def start(self) -> subprocess.Popen[bytes]:
        out = (self.tmp / f"deriver-{len(self.procs)}.log").open("wb")
        p = subprocess.Popen(
            [sys.executable, "-m", "mnemo_deriver"], env=self.env, stdout=out, stderr=out
        )
        self.procs.append(p)
        return p

    def alive(self, p: subprocess.Popen[bytes]) -> None:
        if p.poll() is not None:
            logs = sorted(self.tmp.glob("deriver-*.log"))
            raise AssertionError(logs[-1].read_text()[-3000:])

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


T = TypeVar("T")


def _until(
    check: Callable[[], T],
    what: str,
    p: subprocess.Popen[bytes],
    derivers: Derivers,
    timeout: float = 120.0,
) -> T:
    """Wait until ``check`` answers something true (``p`` must stay alive); that answer."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        derivers.alive(p)
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_neighbour_is_derived_past_a_backlog_larger_than_the_hold_and_a_kill_loses_none(
    pg_admin_url: str, tmp_path: Path
) -> None:
    server = LocalNats(tmp_path / "nats", free_port())
    url = server.start()
    db = new_database(pg_admin_url)
    derivers = Derivers(tmp_path, url, db)
    try:
        first = derivers.start()
        other = neighbour(BACKLOG, subjects.DEFAULT_PARTITIONS)
        backlog = asyncio.run(_post(url, db, [_said(BACKLOG, i) for i in range(300)]))
        [late] = asyncio.run(_post(url, db, [_said(other, 0)]))

        def other_derived() -> list[tuple[int, ObservationWritten]]:
            obs = asyncio.run(_observations(url))
            return obs if _cited(obs, other)[late] else []

        obs = _until(other_derived, "the neighbour was never derived", first, derivers)
        at = min(s for s, e in obs if e.workspace == other)
        before = {
            m for s, e in obs if e.workspace == BACKLOG and s < at for m in e.source_message_seqs
        }
        # Delivered at once, derived in its turn: before, not until 260 of the backlog were.
        assert len(before) <= 120, len(before)
        assert _gaps(db).get(BACKLOG), "the backlog past its share left no record"

        # Killed while it reads the backlog again, then a new deriver takes the partition.
        _until(
            lambda: len(_cited(asyncio.run(_observations(url)), BACKLOG)) >= 2 * HOLD,
            "the backlog was never read again",
            first,
            derivers,
        )
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        killed_at = len(_cited(asyncio.run(_observations(url)), BACKLOG))
        second = derivers.start()

        def all_derived() -> bool:
            cited = _cited(asyncio.run(_observations(url)), BACKLOG)
            return set(cited) >= set(backlog) and not _gaps(db)

        _until(all_derived, "the backlog was not all derived after the kill", second, derivers)
        obs = asyncio.run(_observations(url))
        # No observation twice (a message derived again publishes the same event ids, which
        # the stream's duplicate window drops), each message of the backlog cited.
        ids = Counter(e.observation_id for _, e in obs)
        assert not [i for i, n in ids.items() if n > 1]
        assert set(_cited(obs, BACKLOG)) == set(backlog)
        print(f"neighbour derived after {len(before)} of 300; killed after {killed_at}")
    finally:
        derivers.stop()
        server.stop()
