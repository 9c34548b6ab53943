"""Schema migrations: plain SQL files applied in order by yoyo, under one Postgres lock.

Each owner of tables keeps its migrations in a ``migrations`` folder of its own package (file
names ``<owner>-NNNN-<what>.sql``, so ids are unique across owners; ``-- depends:`` orders
them across owners). ``migrate`` applies whatever the database has not seen yet and records it
in ``_yoyo_migration``; running it again, or from several processes at once, is harmless.

The lock is a session-level advisory lock on the migrating connection, taken before yoyo looks
at anything. yoyo's own lock is a row in a table, which a process killed mid-migration leaves
behind for every later start to wait on; an advisory lock ends with its connection.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from yoyo import read_migrations
from yoyo.backends.core.postgresql import PostgresqlPsycopgBackend
from yoyo.connections import parse_uri

from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Connection

log = get_logger("mnemo.migrations")

MIGRATION_TABLE = "_yoyo_migration"
# The one key every migrating process locks; hashed from a name rather than a bare number.
_KEY = "hashtextextended('mnemo.schema-migrations', 0)"
_LOCK = f"SELECT pg_advisory_lock({_KEY})"
_UNLOCK = f"SELECT pg_advisory_unlock({_KEY})"


async def schema_lock(conn: Connection) -> None:
    """Inside the caller's transaction: the one lock of every schema change.

    For the few tables whose shape is known only at run time (a vector column takes the
    embedding model's dimension), so they are created under the lock the migrations take.
    """
    await conn.execute(f"SELECT pg_advisory_xact_lock({_KEY})")


def package_migrations(package: str) -> Path:
    """The ``migrations`` folder of an installed package."""
    return Path(str(files(package) / "migrations"))


RUNTIME_MIGRATIONS = package_migrations("mnemo_runtime")


class _Backend(PostgresqlPsycopgBackend):
    """yoyo's psycopg 3 backend, serialised by the advisory lock its connection holds."""

    @contextmanager
    def lock(self, timeout: int = 10) -> Iterator[None]:  # noqa: ARG002
        yield


def migrate_blocking(database_url: str, sources: Sequence[Path]) -> list[str]:
    """``migrate`` for a caller without an event loop."""
    uri = parse_uri(database_url)
    backend = _Backend(uri, MIGRATION_TABLE)
    try:
        backend.execute(_LOCK)
        try:
            backend.init_database()
            pending = backend.to_apply(read_migrations(*(str(s) for s in sources)))
            for i, migration in enumerate(pending, 1):
                # One at a time, each said as it starts and ends: a backfill on a large
                # database takes minutes, and the log says which one is running.
                log.info("migrations.applying", migration=migration.id, of=f"{i}/{len(pending)}")
                started = time.monotonic()
                backend.apply_migrations_only([migration])
                seconds = round(time.monotonic() - started, 3)
                log.info("migrations.applied_one", migration=migration.id, seconds=seconds)
            if pending:
                backend.run_post_apply(pending)
            return [m.id for m in pending]
        finally:
            backend.execute(_UNLOCK)
    finally:
        backend.connection.close()


async def migrate(database_url: str, sources: Sequence[Path]) -> list[str]:
    """Apply the migrations of ``sources`` the database lacks; the ids applied, in order."""
    applied = await asyncio.to_thread(migrate_blocking, database_url, sources)
    if applied:
        log.info("migrations.applied", migrations=applied)
    return applied
