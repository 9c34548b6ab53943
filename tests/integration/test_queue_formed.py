"""A backlog's units complete as its batches are applied, not all at once at the end.

The deriver runs ahead of the memory projection under a backlog. A message counts as completed
once the observations of the batch it was derived in are applied (the batch's last observation
carries ``formed_through``), while the representation's newer observations are still on their
way: the queue status shows the progress a caller waits on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from psycopg_pool import AsyncConnectionPool

from mnemo_deriver.adapters.progress import LogProgress
from mnemo_deriver.batching import RepKey
from mnemo_gateway.routes.queue import work_units
from mnemo_gateway.store import ReadStore
from mnemo_projector.entities import EntityProjection
from mnemo_projector.memory import MemoryProjection
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.pg import open_pool
from mnemo_runtime.vectors import PgVectorIndex
from mnemo_schema.events import (
    Envelope,
    Event,
    MessagePosted,
    PeerCreated,
    PeerDeleted,
    Representation,
)
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.progress import DerivationProgressed

from .retrieval_worlds import Logged

WS = "backlog"
AT = datetime(2024, 3, 1, 9, tzinfo=UTC)
SAID = [
    "Hello there.",
    "I moved to Lisbon in March.",
    "Nice weather.",
    "I adopted a dog named Rex.",
    "See you.",
    "I play the cello.",
]


def _fact(mid: str, seq: int, text: str, span: str, through: int | None) -> ObservationWritten:
    return ObservationWritten(
        workspace=WS,
        observation_id=f"o-{mid}",
        observer="ann",
        observed="ann",
        session_id="s",
        content=text,
        source_message_ids=[mid],
        source_message_seqs=[seq],
        source_span=span,
        formed_through=through,
    )


async def _positions(pool: AsyncConnectionPool, partition: int, memory: int, passages: int) -> None:
    async with pool.connection() as conn:
        for name, seq in (("memory", memory), ("passages", passages)):
            await conn.execute(
                "INSERT INTO projection_positions (name, partition, seq) VALUES (%s, %s, %s)"
                " ON CONFLICT (name, partition) DO UPDATE SET seq = EXCLUDED.seq",
                (name, partition, seq),
            )


async def _derived_units(store: ReadStore) -> dict[str, int]:
    # Filtered to the representation: the derivation units alone, not the summarizer's.
    status = await work_units(store, WS, 0, observer_id="ann")
    return {
        "completed": status.completed_work_units,
        "in_progress": status.in_progress_work_units,
        "pending": status.pending_work_units,
    }


async def test_units_complete_batch_by_batch_while_the_deriver_is_ahead(
    fresh_database: str,
) -> None:
    pool = await open_pool(fresh_database, min_size=1, max_size=4)
    try:
        events: list[Event] = [PeerCreated(workspace=WS, peer_id="ann", metadata={})]
        events += [
            MessagePosted(
                workspace=WS,
                session_id="s",
                message_id=f"m{i}",
                peer_id="ann",
                content=text,
                metadata={},
                created_at=AT + timedelta(minutes=i),
                token_count=5,
                representations=[Representation(observer="ann", observed="ann")],
            )
            for i, text in enumerate(SAID, start=1)
        ]
        posted = list(enumerate(events, start=1))  # m1..m6 at positions 2..7
        async with pool.connection() as conn, conn.transaction():
            await EntityProjection().apply(conn, posted)
        memory = MemoryProjection(build_embedder("fake"), PgVectorIndex(pool), cited=Logged(posted))
        async with pool.connection() as conn:
            await memory.setup(conn)
        # Three batches of two messages: the first two yield one fact each (at 8 and 9),
        # the third nothing. The deriver is done with all six.
        first = _fact("m2", 3, "Ann moved to Lisbon in March.", "I moved to Lisbon", 3)
        second = _fact("m4", 5, "Ann adopted a dog named Rex.", "I adopted a dog named Rex", 5)
        # The deriver's progress goes on the log after the messages; the entity projection
        # keeps it for the queue status.
        said: list[DerivationProgressed] = []

        class Log:
            async def publish(self, events: Sequence[Envelope]) -> list[int]:
                said.extend(e for e in events if isinstance(e, DerivationProgressed))
                return []

        progress = LogProgress(Log())
        key = RepKey(WS, "ann", "ann")
        await progress.done(key, 3, 8)
        await progress.done(key, 5, 9)
        await progress.done(key, 7, 0)
        async with pool.connection() as conn, conn.transaction():
            await EntityProjection().apply(conn, list(enumerate(said, start=20)))
        store = ReadStore(pool)

        await _positions(pool, 0, memory=7, passages=7)
        assert await _derived_units(store) == {"completed": 0, "in_progress": 6, "pending": 0}

        # The first batch's fact applied: its two messages are formed, though the line's
        # newest observation (the second batch's) is not.
        async with pool.connection() as conn, conn.transaction():
            await memory.apply(conn, [(8, first)])
        await _positions(pool, 0, memory=8, passages=7)
        assert await _derived_units(store) == {"completed": 2, "in_progress": 4, "pending": 0}

        # The second applied: the line's newest observation is readable, so the third batch,
        # which wrote nothing, is complete too.
        async with pool.connection() as conn, conn.transaction():
            await memory.apply(conn, [(9, second)])
        await _positions(pool, 0, memory=9, passages=7)
        assert await _derived_units(store) == {"completed": 6, "in_progress": 0, "pending": 0}

        # Deleting the peer takes its formed line and its progress along.
        deleted = [(30, PeerDeleted(workspace=WS, peer_id="ann"))]
        async with pool.connection() as conn, conn.transaction():
            await memory.apply(conn, deleted)
            await EntityProjection().apply(conn, deleted)
            for table in ("formed_lines", "work_lines"):
                cur = await conn.execute(f"SELECT count(*) AS n FROM {table}")
                assert await cur.fetchone() == {"n": 0}, table
    finally:
        await pool.close()
