"""Tables split into hash partitions by the key their searches name, and a table's move into
that form.

The vector tables are searched within one tenant's slice: observation vectors within one
representation (workspace, observer, observed), message passages within one workspace. In one
table, a graph (HNSW) search filtered to a slice walks past every other slice's points near the
query. With a 20,000-message workspace holding 55-60 % of the points, its passage searches took
4.8-7.1 ms against 2.6-3.0 ms in a table of its own (two shared cores, pgvector 0.8); split by
workspace alone, a search of one of its three representations still took 6.8-7.8 ms, 905 of
the points it read being another representation's, against 2.5 ms split by representation.
Split by a hash of the key, each partition has a graph of its own over a sixteenth of the
slices, and a statement planned for its slice reads only that partition: a large slice nearly
fills its partition's graph, and a small one is read by its B-tree and sorted exactly.

The tables' shapes depend on the embedding model (a vector column's dimension), so their
owners create them at run time under the schema lock (``migrate.schema_lock``); ``ensure_split``
moves a table made unsplit, or split by another key, into the form asked for, in the caller's
transaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Connection

# Fixed when a table is created: a different count needs the table made again (a rebuild).
PARTITIONS = 16
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")
log = get_logger("mnemo.pg_partitions")


def partitions_ddl(table: str, count: int = PARTITIONS) -> str:
    """The ``count`` hash partitions of ``table``, if missing."""
    _check(table)
    return "".join(
        f"CREATE TABLE IF NOT EXISTS {table}_p{i} PARTITION OF {table}"
        f" FOR VALUES WITH (MODULUS {count}, REMAINDER {i});\n"
        for i in range(count)
    )


def _hash(key: Sequence[str]) -> str:
    """A hash partitioning of ``key``'s columns, as Postgres states it (``pg_get_partkeydef``)."""
    for column in key:
        _check(column)
    return f"HASH ({', '.join(key)})"


def partition_by(key: Sequence[str]) -> str:
    """The clause that splits a table by a hash of ``key``'s columns."""
    return f"PARTITION BY {_hash(key)}"


async def layout(conn: Connection, table: str) -> str | None:
    """How ``table`` is split: its partition key as Postgres states it (``HASH (workspace)``),
    ``""`` for a plain table, None when there is no such table."""
    _check(table)
    cur = await conn.execute(
        "SELECT coalesce(pg_get_partkeydef(c.oid), '') AS key FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relname = %s AND n.nspname = current_schema() AND c.relkind IN ('r', 'p')",
        (table,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return str(row["key"] if isinstance(row, dict) else row[0])


async def ensure_split(
    conn: Connection, table: str, key: Sequence[str], create: str, indexes: str
) -> int:
    """Make ``table`` split by a hash of ``key`` (``create`` and ``indexes``, idempotent), in
    the caller's transaction, which holds the schema lock: a table made unsplit, or split by
    another key, is moved (``repartition``). The rows moved."""
    found = await layout(conn, table)
    if found is None or found == _hash(key):
        await conn.execute(create + indexes)
        return 0
    log.info("pg.repartitioning", table=table, layout=found or "plain", key=list(key))
    return await repartition(conn, table, create, indexes)


async def repartition(conn: Connection, table: str, create: str, indexes: str) -> int:
    """Move ``table`` (plain, or split otherwise) into the form ``create`` makes, in the
    caller's transaction: its rows are held in a temporary table while it is dropped (its
    partitions and indexes with it) and made again without secondary indexes; they are copied
    back, then ``indexes`` are built over them at once (a graph built over its rows is built
    faster than one grown row by row). The rows moved."""
    _check(table)
    held = f"{table}_held"
    await conn.execute(f"CREATE TEMPORARY TABLE {held} ON COMMIT DROP AS SELECT * FROM {table}")
    await conn.execute(f"DROP TABLE {table}")
    await conn.execute(create)
    cur = await conn.execute(
        "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS cols FROM pg_attribute"
        " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        (f"pg_temp.{held}",),
    )
    row = await cur.fetchone()
    assert row is not None
    cols = row["cols"] if isinstance(row, dict) else row[0]
    cur = await conn.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {held}")
    moved = cur.rowcount
    await conn.execute(f"DROP TABLE {held}")
    await conn.execute(indexes)
    # Statistics now: without them a search is planned as if the partitions were empty (an
    # exact scan of a large workspace, three times slower than its graph) until autovacuum.
    await conn.execute(f"ANALYZE {table}")
    log.info("pg.repartitioned", table=table, rows=moved, partitions=PARTITIONS)
    return moved


def _check(table: str) -> None:
    if not _NAME.match(table):
        raise ValueError(f"{table!r} is not a plain table name")
