"""The projector's two ways of applying a batch, against Postgres: one guarded statement for
batches of messages, a transaction for the rest; both move the position only from where it was."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import psycopg

from mnemo_projector.domain import apply_batch, messages_only
from mnemo_projector.entities import EntityProjection
from mnemo_projector.positions import advance_guarded, read_position
from mnemo_projector.tables import PROJECTION, drop_projection
from mnemo_runtime.pg import open_pool
from mnemo_schema.events import (
    Event,
    MessagePosted,
    PeerCreated,
    PeerDeleted,
    Representation,
    SessionCreated,
    SessionDeleted,
    WorkspaceDeleted,
)
from mnemo_schema.progress import (
    DerivationProgressed,
    SummarizationProgressed,
    lines_of,
    sessions_of,
)

WS = "w"


def posted(seq: int) -> tuple[int, MessagePosted]:
    return seq, MessagePosted(
        workspace=WS,
        session_id="s",
        message_id=f"m{seq}",
        peer_id="ann",
        content=f"message number {seq}",
        metadata={"n": seq},
        token_count=3,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        representations=[Representation(observer="ben", observed="ann")],
    )


async def rows(conn: psycopg.AsyncConnection) -> list[tuple[object, ...]]:
    cur = await conn.execute(
        "SELECT id, session_id, seq, peer_id, content, metadata, token_count, created_at,"
        " representations FROM messages WHERE workspace = %s ORDER BY seq",
        (WS,),
    )
    return [tuple(r.values()) for r in await cur.fetchall()]


async def test_a_batch_of_messages_is_one_guarded_statement(fresh_database):
    pool = await open_pool(fresh_database)
    try:
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO projection_positions (name, partition, seq) VALUES (%s, 3, 5)",
                (PROJECTION,),
            )
            batch = [posted(6), posted(7)]
            statement = EntityProjection().guarded(batch)
            assert statement is not None

            # Another projector (or a rebuild) moved the position: nothing is written.
            assert not await advance_guarded(conn, PROJECTION, 3, statement, 4, 7)
            assert await rows(conn) == []
            assert await read_position(conn, PROJECTION, 3) == 5

            assert await advance_guarded(conn, PROJECTION, 3, statement, 5, 7)
            assert await read_position(conn, PROJECTION, 3) == 7
            guarded = await rows(conn)
            assert [r[0] for r in guarded] == ["m6", "m7"]

            # The same batch again, from the old position, is refused and changes nothing.
            assert not await advance_guarded(conn, PROJECTION, 3, statement, 5, 7)
            assert await rows(conn) == guarded

            # The rows are those the transactional path writes for the same events.
            await conn.execute("DELETE FROM messages WHERE workspace = %s", (WS,))
            async with conn.transaction():
                await apply_batch(conn, batch)
            assert await rows(conn) == guarded
    finally:
        await pool.close()


def test_only_batches_of_nothing_but_messages_are_guarded():
    created = (1, SessionCreated(workspace=WS, session_id="s", metadata={}))
    assert messages_only([posted(2), posted(3)]) is not None
    assert messages_only([]) is None
    assert messages_only([created]) is None
    assert messages_only([posted(2), created]) is None
    assert messages_only([created, posted(2)]) is None


async def test_progress_is_kept_for_what_exists_and_goes_with_what_is_deleted(fresh_database):
    pool = await open_pool(fresh_database)
    try:
        made: list[tuple[int, Event]] = [
            (1, PeerCreated(workspace=WS, peer_id="ann", metadata={})),
            (2, PeerCreated(workspace=WS, peer_id="ben", metadata={})),
            (3, SessionCreated(workspace=WS, session_id="s", metadata={})),
        ]
        lines: list[tuple[int, Event]] = [
            (4, DerivationProgressed(workspace=WS, observer="ben", observed="ann", taken_seq=9)),
            (
                5,
                DerivationProgressed(
                    workspace=WS, observer="ann", observed="ann", taken_seq=7, done_seq=7
                ),
            ),
            (6, SummarizationProgressed(workspace=WS, session_id="s", done_seq=9, summary_seq=5)),
            # An older event after a newer one moves nothing back.
            (7, DerivationProgressed(workspace=WS, observer="ben", observed="ann", taken_seq=3)),
            # A line of a peer that does not exist, a session that does not: no row.
            (8, DerivationProgressed(workspace=WS, observer="cat", observed="ann", done_seq=7)),
            (9, SummarizationProgressed(workspace=WS, session_id="t", done_seq=9)),
        ]
        async with pool.connection() as conn:
            async with conn.transaction():
                await apply_batch(conn, made + lines)
            assert await progress(conn) == (
                [("ann", "ann", 7, 7, 0), ("ben", "ann", 9, 0, 0)],
                [("s", 9, 5)],
            )
            # The rule the stages' contract tests read progress by, for what exists.
            events = [e for _, e in lines]
            rule_lines = lines_of(events)
            rule_sessions = sessions_of(events)
            assert await progress(conn) == (
                [(o, d, *at) for (_, o, d), at in sorted(rule_lines.items()) if o != "cat"],
                [(sid, *at) for (_, sid), at in rule_sessions.items() if sid == "s"],
            )
            # Deleting ben takes his lines; deleting the session, its count. Progress that was
            # in flight and lands after a deletion leaves nothing either.
            gone: list[tuple[int, Event]] = [
                (10, PeerDeleted(workspace=WS, peer_id="ben")),
                (11, SessionDeleted(workspace=WS, session_id="s")),
                (
                    12,
                    DerivationProgressed(workspace=WS, observer="ben", observed="ann", done_seq=9),
                ),
                (13, SummarizationProgressed(workspace=WS, session_id="s", done_seq=12)),
            ]
            async with conn.transaction():
                await apply_batch(conn, gone)
            assert await progress(conn) == ([("ann", "ann", 7, 7, 0)], [])
            async with conn.transaction():
                await apply_batch(conn, [(14, WorkspaceDeleted(workspace=WS))])
            assert await progress(conn) == ([], [])
    finally:
        await pool.close()


async def progress(conn: psycopg.AsyncConnection) -> tuple[list[tuple[object, ...]], ...]:
    cur = await conn.execute(
        "SELECT observer, observed, taken_seq, done_seq, observation_seq FROM work_lines"
        " WHERE workspace = %s ORDER BY observer, observed",
        (WS,),
    )
    lines = [tuple(r.values()) for r in await cur.fetchall()]
    cur = await conn.execute(
        "SELECT session_id, done_seq, summary_seq FROM work_sessions WHERE workspace = %s",
        (WS,),
    )
    return lines, [tuple(r.values()) for r in await cur.fetchall()]


async def test_a_drop_that_loses_a_deadlock_to_a_running_reader_is_tried_again(fresh_database):
    """A rebuild's drop against a running stack: a service's transaction that has read a table
    late in the drop's order and then reads one the drop already holds closes a deadlock. The
    drop, the side Postgres aborts here, starts again and empties the tables once the reader
    is done."""
    pool = await open_pool(fresh_database)
    reader = await psycopg.AsyncConnection.connect(fresh_database)
    try:
        async with pool.connection() as conn:
            async with conn.transaction():
                await apply_batch(conn, [posted(1), posted(2)])
            await conn.execute(
                "INSERT INTO projection_positions (name, partition, seq) VALUES (%s, 0, 2)"
                " ON CONFLICT (name, partition) DO UPDATE SET seq = 2",
                (PROJECTION,),
            )
        # The reader is the side that waits longest before looking for a cycle.
        await reader.execute("SET deadlock_timeout = '60s'")
        await reader.execute("SELECT count(*) FROM work_sessions")
        async with pool.connection() as conn, pool.connection() as watch:
            drop = asyncio.create_task(drop_projection(conn))

            async def waiting_for_the_reader() -> bool:
                cur = await watch.execute(
                    "SELECT count(*) AS n FROM pg_locks"
                    " WHERE relation = 'work_sessions'::regclass AND NOT granted"
                )
                row = await cur.fetchone()
                return row is not None and row["n"] > 0

            deadline = time.monotonic() + 30
            while not await waiting_for_the_reader():
                assert not drop.done(), drop
                assert time.monotonic() < deadline, "the drop never waited for the reader"
                await asyncio.sleep(0.02)
            # The drop holds ``messages``; the reader asks for it: a cycle.
            await asyncio.wait_for(reader.execute("SELECT count(*) FROM messages"), 30)
            await reader.commit()
            await asyncio.wait_for(drop, 30)
            assert await rows(conn) == []
            assert await read_position(conn, PROJECTION, 0) == 0
    finally:
        await reader.close()
        await pool.close()
