"""The passage projection against Postgres: how a long message is cut, and vectors made with
another cut (or model) dropped and made again from the log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mnemo_projector.passages import (
    MAX_PASSAGE_TOKENS,
    PASSAGES,
    PassageProjection,
    vectors_of,
)
from mnemo_runtime.embeddings import build_embedder
from mnemo_runtime.pg import open_pool
from mnemo_runtime.tokens import token_spans
from mnemo_schema.events import MessagePosted, Representation

pytestmark = pytest.mark.integration

LONG = (
    "I'm building a budget tracker with Flask 2.3.1 and SQLite 3.39, and the first sprint ends "
    "on March 29, so I need the registration and login routes first. " * 12
).strip()


def posted(text: str) -> MessagePosted:
    return MessagePosted(
        workspace="w",
        session_id="s",
        message_id="m1",
        peer_id="user",
        content=text,
        metadata={},
        token_count=len(token_spans(text)),
        created_at=datetime(2024, 3, 15, tzinfo=UTC),
        representations=[Representation(observer="user", observed="user")],
    )


async def projected(projection: PassageProjection, conn: Any) -> None:
    """The projection's tables made, and LONG's passages in them."""
    await projection.setup(conn)
    async with conn.transaction():
        await projection.apply(conn, [(1, posted(LONG))])


async def test_a_long_message_is_cut_in_windows_and_another_cut_is_made_again(fresh_database):
    embedder = build_embedder("minilm", workers=1)
    projection = PassageProjection(embedder)
    pool = await open_pool(fresh_database)
    try:
        async with pool.connection() as conn:
            await projected(projection, conn)
            cur = await conn.execute(
                "SELECT start_char, end_char, parts FROM message_passages ORDER BY passage"
            )
            spans = [(r["start_char"], r["end_char"], r["parts"]) for r in await cur.fetchall()]
            assert len(spans) > 2 and all(parts == len(spans) for _, _, parts in spans)
            assert all(len(token_spans(LONG[a:b])) <= MAX_PASSAGE_TOKENS for a, b, _ in spans)
            assert spans[0][0] == 0 and spans[-1][1] == len(LONG)
            cur = await conn.execute(
                "SELECT model FROM vector_indexes WHERE name = 'message_passages'"
            )
            assert (await cur.fetchone())["model"] == vectors_of(embedder.model_name)  # type: ignore[index]

            # Vectors of an earlier cut (the same model over 240-token windows) are not searched
            # beside these: the projection starts over from the log.
            await conn.execute(
                "UPDATE vector_indexes SET model = %s WHERE name = 'message_passages'",
                (f"{embedder.model_name}, passages of 240 tokens overlapping by 48",),
            )
            await conn.execute(
                "INSERT INTO projection_positions (name, partition, seq) VALUES (%s, 0, 1)"
                " ON CONFLICT (name, partition) DO UPDATE SET seq = 1",
                (PASSAGES,),
            )
            await conn.commit()
            await projection.setup(conn)
            cur = await conn.execute("SELECT count(*) AS n FROM message_passages")
            assert (await cur.fetchone())["n"] == 0  # type: ignore[index]
            cur = await conn.execute(
                "SELECT seq FROM projection_positions WHERE name = %s", (PASSAGES,)
            )
            assert [r["seq"] for r in await cur.fetchall()] == [0]
            cur = await conn.execute(
                "SELECT model FROM vector_indexes WHERE name = 'message_passages'"
            )
            assert (await cur.fetchone())["model"] == vectors_of(embedder.model_name)  # type: ignore[index]
    finally:
        await pool.close()


async def test_passages_made_before_the_split_are_moved_into_partitions(fresh_database):
    # The table as it was made before passages were split by workspace, with one message's
    # passages in it: starting the projection moves them, with every row and index.
    projection = PassageProjection(build_embedder("minilm", workers=1))
    pool = await open_pool(fresh_database)
    try:
        async with pool.connection() as conn:
            await projected(projection, conn)
            cur = await conn.execute("SELECT * FROM message_passages ORDER BY passage")
            before = await cur.fetchall()
            await conn.execute("CREATE TABLE unsplit AS SELECT * FROM message_passages")
            await conn.execute("DROP TABLE message_passages")
            await conn.execute("ALTER TABLE unsplit RENAME TO message_passages")
            await conn.execute(
                "ALTER TABLE message_passages ADD PRIMARY KEY (workspace, message_id, passage)"
            )
            await conn.execute(
                "CREATE INDEX message_passages_hnsw ON message_passages"
                " USING hnsw (embedding halfvec_ip_ops)"
            )
            await conn.commit()
            await projection.setup(conn)
            cur = await conn.execute(
                "SELECT relkind::text AS kind FROM pg_class WHERE relname = 'message_passages'"
            )
            assert await cur.fetchone() == {"kind": "p"}
            cur = await conn.execute("SELECT * FROM message_passages ORDER BY passage")
            assert await cur.fetchall() == before
            cur = await conn.execute(
                "SELECT count(*) AS n FROM pg_indexes WHERE tablename = 'message_passages'"
            )
            assert await cur.fetchone() == {"n": 4}
    finally:
        await pool.close()
