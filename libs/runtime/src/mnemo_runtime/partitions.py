"""Which replica works which partition: leases held as Postgres session advisory locks.

The event stream stores every workspace's events in one of N partitions (``mnemo_schema.subjects``).
A stage that scales out (the deriver, the summarizer, each projection) is a *group*: each of
its replicas registers as a member (a lock on a member slot) and works the partitions whose
locks it holds, all on one connection of its own. Once a second, each replica counts the
members of its groups and balances: it takes free partitions up to its share (N divided by
the members, rounded up) and hands back those above it (its work on a partition stops first,
then the lock is released). So each partition is worked by at most one replica at a time, in
log order, and N replicas share the partitions about evenly.

When a replica dies, its connection closes and Postgres releases its locks at once (a SIGKILL
closes the socket; a replica cut off from the network is dropped after the TCP keepalives,
about 15 s); the survivors see one member fewer at their next tick and take the freed
partitions, starting where the log says the dead replica's work ended. A replica that loses
its own connection stops working all its partitions before it reconnects, so it never works
a partition that another has taken (the keepalives drop it later than it notices the loss).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import zlib
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Connection

log = get_logger("mnemo.partitions")

MAX_MEMBERS = 1024
# libpq keepalives: a peer cut off without a FIN is noticed in about 5 + 3 * 2 seconds.
_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}
_LOCKS = """
SELECT classid::bigint AS k1, objid::bigint AS k2, pid = pg_backend_pid() AS mine
FROM pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 2
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND classid = ANY(%s::oid[])
"""


class Partitioned(Protocol):
    """A stage that works partitions one at a time each: started and stopped by its lease."""

    group: str

    async def start(self, partition: int) -> None:
        """Begin working ``partition`` (from where the log says its work stands)."""
        ...

    async def stop(self, partition: int) -> None:
        """Stop working ``partition``; return once nothing of it runs any more."""
        ...


def _key(group: str, what: str) -> int:
    """A stable, non-negative int4 key for a group's locks of one kind."""
    return zlib.crc32(f"mnemo:{group}:{what}".encode()) & 0x7FFFFFFF


class _Group:
    def __init__(self, stage: Partitioned) -> None:
        self.stage = stage
        self.members_key = _key(stage.group, "members")
        self.partitions_key = _key(stage.group, "partitions")
        self.slot: int | None = None
        self.owned: set[int] = set()


class Leases:
    """The partition leases of one process, for every partitioned stage it runs."""

    def __init__(self, dsn: str, partitions: int, interval_s: float = 1.0) -> None:
        self._dsn = dsn
        self.partitions = partitions
        self._interval = interval_s
        self._groups: list[_Group] = []
        self._changed = asyncio.Event()

    def add(self, stage: Partitioned) -> None:
        """Have ``stage`` share its group's partitions with its other replicas."""
        self._groups.append(_Group(stage))

    def owned(self, group: str) -> frozenset[int]:
        """The partitions this process works for ``group`` now."""
        return frozenset(p for g in self._groups if g.stage.group == group for p in g.owned)

    async def run(self, stop: asyncio.Event) -> None:
        """Hold and balance leases until ``stop``; every partition is stopped on the way out."""
        backoff = 0.5
        while not stop.is_set():
            conn: Connection | None = None
            try:
                conn = await AsyncConnection.connect(
                    make_conninfo(self._dsn, **_KEEPALIVES),
                    autocommit=True,
                    row_factory=dict_row,
                )
                await conn.execute("SET statement_timeout = '5s'")
                backoff = 0.5
                while not stop.is_set():
                    await self._tick(conn)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), self._interval)
            except (psycopg.Error, OSError, TimeoutError) as err:
                log.warning("partitions.connection_lost", error=repr(err))
            finally:
                # Without the connection the locks are gone, or soon will be: stop all work
                # before another replica can take it. Unlocking is closing the connection.
                await self._stop_all()
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
            if not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), backoff)
                backoff = min(backoff * 2, 5.0)

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(g, p) for g in self._groups for p in sorted(g.owned)))
        for g in self._groups:
            g.owned.clear()
            g.slot = None

    async def _stop(self, g: _Group, partition: int) -> None:
        try:
            await g.stage.stop(partition)
        except Exception:
            log.exception("partitions.stop_failed", group=g.stage.group, partition=partition)
        log.info("partitions.released", group=g.stage.group, partition=partition)

    async def _tick(self, conn: Connection) -> None:
        keys = [k for g in self._groups for k in (g.members_key, g.partitions_key)]
        rows = await (await conn.execute(_LOCKS, (keys,))).fetchall()
        for g in self._groups:
            await self._balance(conn, g, rows)

    async def _balance(self, conn: Connection, g: _Group, rows: Sequence[dict[str, Any]]) -> None:
        members = [r for r in rows if r["k1"] == g.members_key]
        if g.slot is None or not any(r["mine"] and r["k2"] == g.slot for r in members):
            g.slot = await self._join(conn, g, {int(r["k2"]) for r in members})
            if g.slot is None:
                return
            members.append({"k1": g.members_key, "k2": g.slot, "mine": True})
        held = {int(r["k2"]) for r in rows if r["k1"] == g.partitions_key and r["mine"]}
        for p in sorted(g.owned - held):  # cannot happen while the connection lives
            log.error("partitions.lease_lost", group=g.stage.group, partition=p)
            await self._stop(g, p)
            g.owned.discard(p)
        share = math.ceil(self.partitions / max(len(members), 1))
        for p in sorted(g.owned, reverse=True)[: max(0, len(g.owned) - share)]:
            await self._stop(g, p)
            g.owned.discard(p)
            await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (g.partitions_key, p))
        if len(g.owned) >= share:
            return
        taken = {int(r["k2"]) for r in rows if r["k1"] == g.partitions_key}
        # Start looking at a place of our own, so that replicas starting together rarely
        # race for the same partitions.
        first = (g.slot or 0) * self.partitions // max(len(members), 1)
        for i in range(self.partitions):
            p = (first + i) % self.partitions
            if p in taken or p in g.owned:
                continue
            if not await _try_lock(conn, g.partitions_key, p):
                continue
            try:
                await g.stage.start(p)
            except Exception:
                log.exception("partitions.start_failed", group=g.stage.group, partition=p)
                await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (g.partitions_key, p))
                continue
            g.owned.add(p)
            log.info("partitions.acquired", group=g.stage.group, partition=p)
            if len(g.owned) >= share:
                return

    async def _join(self, conn: Connection, g: _Group, used: set[int]) -> int | None:
        for slot in range(MAX_MEMBERS):
            if slot not in used and await _try_lock(conn, g.members_key, slot):
                return slot
        log.error("partitions.no_member_slot", group=g.stage.group)
        return None


async def _try_lock(conn: Connection, key1: int, key2: int) -> bool:
    cur = await conn.execute("SELECT pg_try_advisory_lock(%s, %s) AS held", (key1, key2))
    row = await cur.fetchone()
    return bool(row and row["held"])


@contextlib.asynccontextmanager
async def held_by(
    dsn: str, partitions: int, stop: asyncio.Event, leases: Leases | None = None
) -> AsyncIterator[Leases]:
    """``leases`` (a process's shared holder), or a holder of the caller's own that runs until
    ``stop`` and is awaited on the way out, for a stage run alone."""
    if leases is not None:
        yield leases
        return
    own = Leases(dsn, partitions)
    holder = asyncio.create_task(own.run(stop))
    try:
        yield own
    finally:
        await holder
