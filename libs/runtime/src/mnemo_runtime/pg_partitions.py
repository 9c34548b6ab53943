"""Tables split by workspace into hash partitions, and a plain table's move into that form.

The vector tables (observation vectors, message passages) are searched within one workspace.
In one table, a graph (HNSW) search filtered to a workspace walks past every other tenant's
points near the query: with a 20,000-message workspace holding 55-60 % of the points, its
searches took 4.8-7.1 ms against 2.6-3.0 ms in a table of its own (two shared cores, pgvector
0.8). Split by a hash of the workspace, each partition has a graph of its own over a sixteenth
of the tenants, and a statement planned for its workspace reads only that partition.

The tables' shapes depend on the embedding model (a vector column's dimension), so their
owners create them at run time under the schema lock (``migrate.schema_lock``); ``repartition``
moves a table made before it was split into the split form, in the caller's transaction.
"""

from __future__ import annotations

import re
from typing import Any

from psycopg import AsyncConnection

from mnemo_runtime.logging import get_logger

# Fixed when a table is created: a different count needs the table made again (a rebuild).
PARTITIONS = 16
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")
log = get_logger("mnemo.pg_partitions")


def partitions_ddl(table: str, count: int = PARTITIONS) -> str:
    """The ``count`` hash partitions of ``table`` (partitioned by workspace), if missing."""
    _check(table)
    return "".join(
        f"CREATE TABLE IF NOT EXISTS {table}_p{i} PARTITION OF {table}"
        f" FOR VALUES WITH (MODULUS {count}, REMAINDER {i});\n"
        for i in range(count)
    )


async def kind_of(conn: AsyncConnection[Any], table: str) -> str | None:
    """``partitioned``, ``plain``, or None when there is no such table."""
    _check(table)
    cur = await conn.execute(
        "SELECT c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relname = %s AND n.nspname = current_schema()",
        (table,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    kind = row["kind"] if isinstance(row, dict) else row[0]
    return "partitioned" if kind == "p" else "plain"


async def repartition(conn: AsyncConnection[Any], table: str, create: str, indexes: str) -> int:
    """Move plain ``table`` into its partitioned form, in the caller's transaction: its rows
    are copied into the table ``create`` makes (the parent and its partitions, no secondary
    index), then ``indexes`` are built over them at once (a graph built over its rows is
    built faster than one grown row by row); the rows moved."""
    _check(table)
    old = f"{table}_unsplit"
    cur = await conn.execute(
        "SELECT i.relname AS name, con.conname AS constraint FROM pg_index x"
        " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
        " JOIN pg_namespace n ON n.oid = t.relnamespace"
        " LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid"
        " WHERE t.relname = %s AND n.nspname = current_schema()",
        (table,),
    )
    for row in await cur.fetchall():
        name, constraint = (row["name"], row["constraint"]) if isinstance(row, dict) else row
        if constraint is not None:  # the key: renamed, so that the new table's may take its name
            await conn.execute(
                f'ALTER TABLE {table} RENAME CONSTRAINT "{constraint}" TO "{constraint}_unsplit"'
            )
        else:
            await conn.execute(f'DROP INDEX "{name}"')
    await conn.execute(f"ALTER TABLE {table} RENAME TO {old}")
    await conn.execute(create)
    cur = await conn.execute(
        "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS cols FROM pg_attribute"
        " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        (old,),
    )
    row = await cur.fetchone()
    assert row is not None
    cols = row["cols"] if isinstance(row, dict) else row[0]
    cur = await conn.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {old}")
    moved = cur.rowcount
    await conn.execute(f"DROP TABLE {old}")
    await conn.execute(indexes)
    # Statistics now: without them a search is planned as if the partitions were empty (an
    # exact scan of a large workspace, three times slower than its graph) until autovacuum.
    await conn.execute(f"ANALYZE {table}")
    log.info("pg.repartitioned", table=table, rows=moved, partitions=PARTITIONS)
    return moved


def _check(table: str) -> None:
    if not _NAME.match(table):
        raise ValueError(f"{table!r} is not a plain table name")
