"""The deriver scales out by partition: one process and three derive the same observations, and
killing one of three mid-run loses nothing (its partitions, and the work on them, move to the
survivors)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nats

from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.infra import open_infra
from mnemo_runtime.stack import LocalNats, free_port
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, Representation, decode_event
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.progress import lines_of

from .conftest import new_database

WORKSPACES = [f"scale-{i}" for i in range(6)]
FACTS = [
    "I moved to Lisbon last spring.",
    "I work as a nurse at the city hospital.",
    "I have two dogs called Rex and Luna.",
    "I started learning the cello in May.",
    "I grew up in a small town near Porto.",
    "I run ten kilometres every Sunday.",
    "I am allergic to peanuts.",
    "I bought a red bicycle yesterday.",
]
REPLIES = ["That sounds great.", "Tell me more about it.", "How did that go?"]


def conversation(part: int) -> list[MessagePosted]:
    """Six workspaces (spread over the partitions), one session each, two peers taking turns;
    ``part`` 0 or 1 of it, a day apart."""
    start = datetime(2026, 3, 1 + part, 9, 0, tzinfo=UTC)
    out = []
    for w in WORKSPACES:
        for i in range(24):
            speaker, other = ("ann", "bob") if i % 2 == 0 else ("bob", "ann")
            text = FACTS[(i // 2) % len(FACTS)] if i % 2 == 0 else REPLIES[i % len(REPLIES)]
            reps = [
                Representation(observer=speaker, observed=speaker),
                Representation(observer=other, observed=speaker),
            ]
            message = MessagePosted(
                workspace=w,
                session_id="s",
                message_id=f"m{part}-{i}",
                peer_id=speaker,
                content=text,
                metadata={},
                created_at=start + timedelta(minutes=i),
                token_count=len(text.split()),
                representations=reps,
            )
            out.append(message)
    return out


async def _publish(nats_url: str, database_url: str, part: int) -> dict[tuple[str, str, str], int]:
    """Post a part of the conversation; the newest position each representation must be
    derived to."""
    infra = await open_infra(nats_url, database_url, "scaling-post")
    try:
        events = conversation(part)
        seqs = await EventPublisher(infra.js).publish(events)
    finally:
        await infra.close()
    due: dict[tuple[str, str, str], int] = {}
    for e, seq in zip(events, seqs, strict=True):
        for r in e.representations:
            due[(e.workspace, r.observer, r.observed)] = seq
    return due


async def _observations(nats_url: str) -> list[ObservationWritten]:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        sub = await js.pull_subscribe(subjects.observation_filter(), stream=subjects.STREAM)
        out = []
        while True:
            try:
                msgs = await sub.fetch(500, timeout=1.0)
            except Exception:
                break
            for m in msgs:
                await m.ack()
                e = decode_event(m.data)
                if isinstance(e, ObservationWritten):
                    out.append(e)
        return out
    finally:
        await nc.close()


async def _lines(nats_url: str, taken: bool = False) -> dict[tuple[str, str, str], int]:
    """How far the deriver says each representation's line is done (or ``taken``), from its
    progress events on the log."""
    nc = await nats.connect(nats_url)
    try:
        stored = await read_stored(nc.jetstream(), subjects.STREAM, subjects.work_filter())
    finally:
        await nc.close()
    lines = lines_of(decode_event(s.data) for s in stored)
    return {key: took if taken else done for key, (took, done, _) in lines.items()}


def _done(nats_url: str, due: dict[tuple[str, str, str], int]) -> bool:
    lines = asyncio.run(_lines(nats_url))
    return all(lines.get(k, 0) >= seq for k, seq in due.items())


def _taken(nats_url: str, workspaces: set[str]) -> bool:
    """Whether the deriver has taken work of ``workspaces``."""
    lines = asyncio.run(_lines(nats_url, taken=True))
    return any(seq > 0 for (ws, _, _), seq in lines.items() if ws in workspaces)


def _held(log: Path) -> set[int]:
    """The deriver partitions a replica holds now, from its log."""
    held: set[int] = set()
    for line in log.read_text().splitlines() if log.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("group") != subjects.DERIVER:
            continue
        if entry.get("event") == "partitions.acquired":
            held.add(entry["partition"])
        elif entry.get("event") == "partitions.released":
            held.discard(entry["partition"])
    return held


def _alive(procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    assert all(p.poll() is None for p in procs), [p.read_text()[-3000:] for p in logs]


def _run(
    tmp: Path, admin_url: str, replicas: int, kill_one: bool
) -> tuple[list[ObservationWritten], str]:
    """The conversation through ``replicas`` deriver processes on a NATS and a database of
    their own; the observations the log holds afterwards, and what happened."""
    server = LocalNats(tmp / "nats", free_port())
    url = server.start()
    db = new_database(admin_url)
    env = {
        **os.environ,
        "NATS_URL": url,
        "DATABASE_URL": db,
        "MNEMO_MIGRATE_ON_START": "false",
        "MNEMO_DERIVER_IDLE_S": "0.2",
    }
    procs: list[subprocess.Popen[bytes]] = []
    report = []
    logs = [tmp / f"deriver-{i}.log" for i in range(replicas)]
    try:
        for path in logs:
            out = path.open("wb")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "mnemo_deriver"], env=env, stdout=out, stderr=out
                )
            )
        deadline = time.monotonic() + 180
        # Balanced first (every replica holds its share), so that the kill takes work away.
        share = -(-subjects.DEFAULT_PARTITIONS // replicas)
        while sorted(len(_held(p)) for p in logs) != sorted(
            [share] * (subjects.DEFAULT_PARTITIONS // share)
            + [subjects.DEFAULT_PARTITIONS % share] * bool(subjects.DEFAULT_PARTITIONS % share)
        ):
            _alive(procs, logs)
            assert time.monotonic() < deadline, "the replicas never shared the partitions"
            time.sleep(0.1)
        due = asyncio.run(_publish(url, db, 0))
        if kill_one:
            mine = _held(logs[0])
            ours = {
                w
                for w in WORKSPACES
                if subjects.partition_of(w, subjects.DEFAULT_PARTITIONS) in mine
            }
            assert ours
            # Frozen once it has taken work of its own (it may finish that first part before
            # the freeze on a fast host); the second part, posted while it is frozen and its
            # partitions still its own, is work the kill certainly takes away from it.
            while not _taken(url, ours):
                assert time.monotonic() < deadline, "the deriver never started"
                time.sleep(0.02)
            procs[0].send_signal(signal.SIGSTOP)
            first_done = _done(url, {k: seq for k, seq in due.items() if k[0] in ours})
        due |= asyncio.run(_publish(url, db, 1))
        if kill_one:
            share_due = {k: seq for k, seq in due.items() if k[0] in ours}
            assert not _done(url, share_due), "replica 0 derived while it was frozen"
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(10)
            report.append(
                f"killed replica 0 holding partitions {sorted(mine)}, "
                f"its first part {'derived' if first_done else 'in progress'}"
            )
            procs, logs = procs[1:], logs[1:]
        while not _done(url, due):
            _alive(procs, logs)
            assert time.monotonic() < deadline, "the derivation never finished"
            time.sleep(0.1)
        if kill_one:
            # The survivors take over every partition between them (at their next balance: the
            # dead replica's own partitions may have had nothing left to derive).
            while set().union(*map(_held, logs)) != set(range(subjects.DEFAULT_PARTITIONS)):
                _alive(procs, logs)
                assert time.monotonic() < deadline, "the survivors never took every partition"
                time.sleep(0.1)
        return asyncio.run(_observations(url)), "; ".join(report)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)  # a frozen replica would not see the terminate
                p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        server.stop()


def test_one_and_three_derivers_derive_the_same_and_a_killed_one_loses_nothing(
    pg_admin_url: str, tmp_path: Path
) -> None:
    alone, _ = _run(tmp_path / "one", pg_admin_url, 1, kill_one=False)
    three, report = _run(tmp_path / "three", pg_admin_url, 3, kill_one=True)
    assert report.startswith("killed replica 0 holding partitions")
    print(report)

    def key(e: ObservationWritten) -> tuple[object, ...]:
        return (
            e.workspace,
            e.observer,
            e.observed,
            e.observation_id,
            e.content,
            tuple(e.source_message_ids),
        )

    assert len(alone) >= 2 * len(WORKSPACES) * len(FACTS)  # each fact, for both observers
    # No observation twice in the log (a redelivered batch publishes the same event ids,
    # which the stream's duplicate window drops), and the same ones either way.
    assert not [k for k, n in Counter(map(key, three)).items() if n > 1]
    assert sorted(map(key, alone)) == sorted(map(key, three))
