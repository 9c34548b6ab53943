"""The ``dream_schedule`` table and the per-representation dream lock, in Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import fields
from datetime import datetime
from typing import Any

from mnemo_dreamer.domain import Schedule, on_completed, on_explicit
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.pg import Connection, Pool
from mnemo_runtime.vectors.ports import Scope

_COLUMNS = [f.name for f in fields(Schedule)]
_KEY = "workspace = %s AND observer = %s AND observed = %s"


def _key(scope: Scope) -> tuple[str, str, str]:
    return (scope.workspace, scope.observer, scope.observed)


def _row(r: dict[str, Any]) -> Schedule:
    return Schedule(**{c: r[c] for c in _COLUMNS})


class PgSchedule:
    """The schedule of every representation, one row each."""

    def __init__(self, pool: Pool, settings: DreamerSettings) -> None:
        self._pool = pool
        self._settings = settings

    async def count_explicit(
        self, scope: Scope, seqs: Sequence[int], now: datetime
    ) -> Schedule | None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO dream_schedule (workspace, observer, observed) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                _key(scope),
            )
            cur = await conn.execute(
                f"SELECT * FROM dream_schedule WHERE {_KEY} FOR UPDATE", _key(scope)
            )
            r: Any = await cur.fetchone()
            new = [seq for seq in seqs if seq > r["applied_seq"]]
            if not new:
                return None
            s = on_explicit(_row(r), now, self._settings, len(new))
            # In the transaction that read the row: a dream completing meanwhile is not undone.
            await conn.execute(
                "UPDATE dream_schedule SET explicit_count = %s, last_activity_at = %s,"
                f" due_at = %s, applied_seq = %s WHERE {_KEY}",
                (s.explicit_count, s.last_activity_at, s.due_at, max(new), *_key(scope)),
            )
            return s

    async def load(self, scope: Scope) -> Schedule:
        async with self._pool.connection() as conn:
            cur = await conn.execute(f"SELECT * FROM dream_schedule WHERE {_KEY}", _key(scope))
            r = await cur.fetchone()
        return _row(r) if r is not None else Schedule(*_key(scope))

    async def forget(self, scope: Scope) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(f"DELETE FROM dream_schedule WHERE {_KEY}", _key(scope))

    async def ready(self, now: datetime) -> list[Schedule]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT * FROM dream_schedule WHERE due_at IS NOT NULL AND due_event_id IS NULL"
                " AND due_at <= %s ORDER BY due_at LIMIT 100",
                (now,),
            )
            return [_row(r) for r in await cur.fetchall()]

    async def mark_published(self, scope: Scope, due_event_id: str) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                f"UPDATE dream_schedule SET due_event_id = %s WHERE {_KEY}",
                (due_event_id, *_key(scope)),
            )

    async def complete(self, scope: Scope, now: datetime, explicit_seen: int) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO dream_schedule (workspace, observer, observed) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                _key(scope),
            )
            cur = await conn.execute(
                f"SELECT * FROM dream_schedule WHERE {_KEY} FOR UPDATE", _key(scope)
            )
            r = await cur.fetchone()
            assert r is not None
            await self._store(conn, on_completed(_row(r), now, explicit_seen, self._settings))

    async def _store(self, conn: Connection, s: Schedule) -> None:
        await conn.execute(
            "UPDATE dream_schedule SET explicit_at_last_dream = %s, last_dream_at = %s,"
            f" due_at = %s, due_event_id = %s WHERE {_KEY}",
            (
                s.explicit_at_last_dream,
                s.last_dream_at,
                s.due_at,
                s.due_event_id,
                s.workspace,
                s.observer,
                s.observed,
            ),
        )

    @asynccontextmanager
    async def lock(self, scope: Scope) -> AsyncIterator[bool]:
        """A session advisory lock on the representation, held on one connection for the dream."""
        key = "\x1f".join(_key(scope))
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 872367)) AS held", (key,)
            )
            row = await cur.fetchone()
            held = bool(row and row["held"])
            try:
                yield held
            finally:
                if held:
                    await conn.execute(
                        "SELECT pg_advisory_unlock(hashtextextended(%s, 872367))", (key,)
                    )
