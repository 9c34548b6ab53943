"""A graph of its own for each sender with many passages.

A representation's read searches the passages of one sender (its peer) by vector. In the graph
of the whole partition, shared with the workspace's other senders, that filter is what makes
the search slow when the question concerns another peer: its nearest passages are that peer's
(each passage is embedded with its sender's name), and the graph walk passes over them one by
one to find the sender's. On a 20,000-message workspace of two peers, a question about the
other one read 8,093 buffers in 4.7-7.3 ms for the sender's 75 nearest passages; in a partial
graph over the sender's passages alone, 1,424 buffers in 0.4-0.9 ms. A search of the whole
workspace (or of several senders) still reads the partition's graph, so it costs what it did.

Such a graph is a partial index of the sender's partition (``WHERE workspace = ... AND peer_id
= ...``), which the statement planned for its values (``mnemo_context.adapters.lists``) uses
by itself. It is built once the sender has ``at`` passages, between batches (``upkeep``),
without blocking writes (``CREATE INDEX CONCURRENTLY``), at the priority of the process that
keeps the passages, and recorded in the ``sender_graphs`` table (projector-0010). It holds the
sender's vectors a second time and every new passage of the sender is written to both graphs.
Erasing the sender or its workspace drops it; a graph left unfinished (the process stopped
during the build) is dropped and built again.
"""

from __future__ import annotations

import asyncio
import hashlib
import time

from psycopg import sql

from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Connection, Pool

log = get_logger("mnemo.projector.sender_graphs")

PREFIX = "message_passages_g_"
# How often the candidates are looked for, at most (each look reads one row per large workspace,
# and the senders of a workspace whose passages changed since).
EVERY_S = 10.0
# Graphs of senders on one partition, at most: Postgres weighs each partial index of a table when
# it plans a statement on it, and writes each row's predicate against every one, so their number
# is bounded (512 over the 16 partitions); past it, a sender's search reads the partition's graph.
PER_PARTITION = 32
# The advisory lock a builder holds while it builds.
LOCK = int.from_bytes(hashlib.sha256(b"mnemo.sender_graphs").digest()[:8], "big", signed=True)


def graph_name(workspace: str, peer_id: str) -> str:
    """The graph's index name: fixed by the sender, within Postgres's 63 characters."""
    digest = hashlib.sha256(f"{workspace}\0{peer_id}".encode()).hexdigest()[:32]
    return PREFIX + digest


async def forget_missing(conn: Connection) -> None:
    """Drop the records of graphs that no longer exist (their table was made again)."""
    await conn.execute("DELETE FROM sender_graphs WHERE to_regclass(name) IS NULL")


async def drop_graphs(conn: Connection, workspace: str, peer_id: str | None = None) -> None:
    """Drop the graphs of a sender (or of every sender of ``workspace``), in the caller's
    transaction."""
    cur = await conn.execute(
        "DELETE FROM sender_graphs WHERE workspace = %s AND (%s::text IS NULL OR peer_id = %s)"
        " RETURNING name",
        (workspace, peer_id, peer_id),
    )
    names = [r["name"] for r in await cur.fetchall()]
    if peer_id is not None:
        names.append(graph_name(workspace, peer_id))  # one whose build was not yet recorded
    for name in sorted(set(names)):
        await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))


class SenderGraphs:
    """Builds the graphs of the senders that have ``at`` passages (0: never), one at a time,
    in the background of the process, at most ``per_partition`` a partition."""

    def __init__(
        self, pool: Pool, at: int, every_s: float = EVERY_S, per_partition: int = PER_PARTITION
    ) -> None:
        self._pool = pool
        self._at = at
        self._every_s = every_s
        self._per_partition = per_partition
        self._next = 0.0
        self._seen: dict[str, int] = {}
        self._task: asyncio.Task[int] | None = None

    @property
    def building(self) -> asyncio.Task[int] | None:
        """The build under way, if any."""
        return self._task if self._task is not None and not self._task.done() else None

    def upkeep(self) -> None:
        """Start looking for senders that need a graph, when due and none is being built."""
        now = time.monotonic()
        if self._at <= 0 or now < self._next or self.building is not None:
            return
        self._next = now + self._every_s
        self._task = asyncio.ensure_future(self.build_due())
        self._task.add_done_callback(_logged)

    async def build_due(self) -> int:
        """Build every graph due now; the number built."""
        built = 0
        async with self._pool.connection() as conn:
            # One builder at a time among the processes keeping passages: another's unfinished
            # graph would look abandoned.
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS mine", (LOCK,))
            if not (await cur.fetchone() or {}).get("mine"):
                return 0
            try:
                built = await self._build_due(conn)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
        return built

    async def _build_due(self, conn: Connection) -> int:
        built = 0
        cur = await conn.execute(
            "SELECT workspace, docs FROM search_docs WHERE kind = 'm' AND docs >= %s",
            (self._at,),
        )
        workspaces = [(r["workspace"], int(r["docs"])) for r in await cur.fetchall()]
        for ws, docs in workspaces:
            if self._seen.get(ws) == docs:
                continue
            cur = await conn.execute(
                "SELECT peer_id, count(*) AS n FROM message_passages WHERE workspace = %s"
                " GROUP BY peer_id HAVING count(*) >= %s ORDER BY peer_id",
                (ws, self._at),
            )
            for r in await cur.fetchall():
                built += await self._ensure(conn, ws, r["peer_id"], int(r["n"]))
            self._seen[ws] = docs
        return built

    async def _ensure(self, conn: Connection, ws: str, peer: str, passages: int) -> int:
        """The sender's graph, built unless it is there; 1 if it was built."""
        name = graph_name(ws, peer)
        cur = await conn.execute(
            "SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)",
            (name,),
        )
        row = await cur.fetchone()
        if row is not None and row["valid"]:
            return 0
        index = sql.Identifier(name)
        if row is not None:  # a build that did not finish
            await conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(index))
        cur = await conn.execute(
            "SELECT tableoid::regclass::text AS part FROM message_passages"
            " WHERE workspace = %s AND peer_id = %s LIMIT 1",
            (ws, peer),
        )
        found = await cur.fetchone()
        if found is None:
            return 0  # erased meanwhile
        cur = await conn.execute(
            "SELECT count(*) AS n FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = %s::regclass AND c.relname LIKE %s",
            (found["part"], PREFIX + "%"),
        )
        held = await cur.fetchone()
        if held is not None and held["n"] >= self._per_partition:
            log.info("passages.sender_graph_skipped", workspace=ws, peer=peer, full=found["part"])
            return 0
        started = time.monotonic()
        await conn.execute("SET statement_timeout = 0")
        try:
            await conn.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON {} USING hnsw"
                    " (embedding halfvec_ip_ops) WITH (m = 16, ef_construction = 64)"
                    " WHERE workspace = {} AND peer_id = {}"
                ).format(index, sql.Identifier(found["part"]), sql.Literal(ws), sql.Literal(peer))
            )
        finally:
            await conn.execute("RESET statement_timeout")
        async with conn.transaction():
            cur = await conn.execute(
                "SELECT 1 FROM message_passages WHERE workspace = %s AND peer_id = %s LIMIT 1",
                (ws, peer),
            )
            if await cur.fetchone() is None:  # erased during the build
                await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(index))
                return 0
            await conn.execute(
                "INSERT INTO sender_graphs (workspace, peer_id, name, passages)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (workspace, peer_id) DO UPDATE"
                " SET name = EXCLUDED.name, passages = EXCLUDED.passages, built_at = now()",
                (ws, peer, name, passages),
            )
        log.info(
            "passages.sender_graph_built",
            workspace=ws,
            peer=peer,
            passages=passages,
            seconds=round(time.monotonic() - started, 2),
        )
        return 1


def _logged(task: asyncio.Task[int]) -> None:
    if not task.cancelled() and (err := task.exception()) is not None:
        log.warning("passages.sender_graph_failed", error=repr(err))
