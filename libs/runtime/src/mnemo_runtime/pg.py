"""Postgres connection pool (psycopg 3, async)."""

from __future__ import annotations

import json
import select
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from psycopg import AsyncClientCursor, AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import AsyncRowFactory, DictRow, dict_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from mnemo_schema.text import written_number

# What every pool of ``open_pool`` hands out: connections whose rows are dicts.
Connection = AsyncConnection[DictRow]
Pool = AsyncConnectionPool[Connection]
Row = TypeVar("Row")

# Session settings of every pooled connection. A filtered search of an HNSW graph (pgvector)
# keeps scanning until it has found as many rows as asked, in nearly increasing distance, instead
# of returning what passed the filter among the graph's first candidates. Postgres accepts the
# setting before the extension is loaded, and the extension takes it up when it is.
SESSION_SETTINGS = {"hnsw.iterative_scan": "relaxed_order"}
# A process may also say how its statements are planned (``plan_cache_mode``, through
# ``open_pool``'s ``settings``): a process of reads alone plans each of its prepared statements
# once (``force_generic_plan``) instead of for every call's values, which was a third of a
# search's Postgres time. The vector searches, whose best plan depends on how many points the
# scope holds, carry their values in their text and are planned for them whatever the mode
# (``literal_cursor``).


def load_json(data: bytes | str) -> Any:
    """JSON of a ``json`` or ``jsonb`` column, its numbers as they were written
    (``mnemo_schema.text.written_number``). Read as an integer beyond 64 bits, a float a client
    stored could be neither sent again (the edge refuses such integers) nor carried by an event
    (a cloned session's metadata would be refused by every projection)."""
    return json.loads(data, parse_int=lambda digits: written_number(int(digits)))


def _named(dsn: str, name: str | None) -> dict[str, str]:
    if name is None or "application_name" in conninfo_to_dict(dsn):
        return {}
    return {"application_name": name[:63]}


def _heard_from_server(conn: Connection) -> bool:
    """Whether an idle connection's socket has something to read: between requests the server
    sends nothing, unless it is closing the connection (a shutdown's FATAL, a FIN)."""
    try:
        fd = conn.fileno()
    except Exception:
        return True  # closed already
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))


class Liveness:
    """The pool's check of a connection before it is handed out.

    When the server restarts, every idle connection in the pool is dead, and each would fail
    the next request given it, however long after the restart. A connection whose server has
    said something since it was last used (no round trip: a look at its socket) is tried with
    an empty query; a dead one means the server went away, so every idle connection is then
    tried at once and the dead ones replaced, and the requests after it do not each meet one.
    """

    def __init__(self) -> None:
        self.pool: Pool | None = None

    async def __call__(self, conn: Connection) -> None:
        if not _heard_from_server(conn):
            return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            if self.pool is not None:
                await self.pool.check()
            raise


async def open_pool(
    dsn: str,
    min_size: int = 1,
    max_size: int = 8,
    name: str | None = None,
    on_connect: Callable[[int], None] | None = None,
    settings: Mapping[str, str] | None = None,
) -> Pool:
    """Open a pool whose connections return rows as dicts and autocommit outside transactions
    (and checked before use when their server may have closed them: see ``Liveness``); JSON
    columns are read by ``load_json``.

    ``name`` is the connections' ``application_name``: the process ``pg_stat_activity`` shows
    for each backend (a DSN's own ``application_name`` wins). ``on_connect`` is told the
    backend pid of each connection opened (see ``priority.BackendPriority``). ``settings`` are
    session settings of each connection beside ``SESSION_SETTINGS``."""
    session = {**SESSION_SETTINGS, **(settings or {})}

    async def configure(conn: Connection) -> None:
        set_json_loads(load_json, conn)
        await conn.set_autocommit(True)
        for name, value in session.items():
            await conn.execute("SELECT set_config(%s, %s, false)", (name, value))
        if on_connect is not None:
            on_connect(conn.info.backend_pid)

    liveness = Liveness()
    pool = AsyncConnectionPool(
        dsn,
        connection_class=Connection,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=configure,
        timeout=10,
        check=liveness,
        kwargs={**_named(dsn, name), "row_factory": dict_row},
    )
    liveness.pool = pool
    await pool.open(wait=True, timeout=30)
    return pool


def literal_cursor(conn: Connection, row_factory: AsyncRowFactory[Row]) -> AsyncClientCursor[Row]:
    """A cursor that sends a statement's values in its text: Postgres plans it for them, even
    on a connection whose prepared statements take generic plans. Rows come as ``row_factory``
    makes them."""
    return AsyncClientCursor(conn, row_factory=row_factory)
