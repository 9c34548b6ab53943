"""The Postgres read models this projector owns. Readers (gateway, ingest) rely on these names."""

from __future__ import annotations

from psycopg import AsyncConnection

from mnemo_projector.domain import FUNCTIONS

PROJECTION = "pg"

DDL = """
CREATE TABLE IF NOT EXISTS projection_positions (
    name text PRIMARY KEY,
    seq bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS workspaces (
    id text PRIMARY KEY,
    uid text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    configuration jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS peers (
    workspace text NOT NULL,
    id text NOT NULL,
    uid text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    configuration jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE TABLE IF NOT EXISTS sessions (
    workspace text NOT NULL,
    id text NOT NULL,
    uid text NOT NULL,
    is_active boolean NOT NULL DEFAULT true,
    metadata jsonb NOT NULL DEFAULT '{}',
    configuration jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE TABLE IF NOT EXISTS session_peers (
    workspace text NOT NULL,
    session_id text NOT NULL,
    peer_id text NOT NULL,
    observe_me boolean NOT NULL,
    observe_others boolean NOT NULL,
    joined_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, session_id, peer_id)
);
CREATE TABLE IF NOT EXISTS messages (
    workspace text NOT NULL,
    id text NOT NULL,
    session_id text NOT NULL,
    seq bigint NOT NULL,
    peer_id text NOT NULL,
    content text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    token_count integer NOT NULL,
    created_at timestamptz NOT NULL,
    representations jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (workspace, id)
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages (workspace, session_id, seq);
CREATE TABLE IF NOT EXISTS summaries (
    workspace text NOT NULL,
    session_id text NOT NULL,
    summary_type text NOT NULL,
    seq bigint NOT NULL,
    content text NOT NULL,
    message_id text NOT NULL,
    message_seq bigint NOT NULL,
    messages_covered integer NOT NULL,
    token_count integer NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, session_id, summary_type, seq)
);
CREATE INDEX IF NOT EXISTS messages_by_peer ON messages (workspace, peer_id, seq);
"""

TABLES = ("workspaces", "peers", "sessions", "session_peers", "messages", "summaries")


async def create_tables(conn: AsyncConnection) -> None:
    """Create the read-model tables if missing (idempotent; serialised by an advisory lock)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(872361)")
        await conn.execute(DDL)
        await conn.execute(FUNCTIONS)
        await conn.execute(
            "INSERT INTO projection_positions (name, seq) VALUES (%s, 0) ON CONFLICT DO NOTHING",
            (PROJECTION,),
        )


async def drop_projection(conn: AsyncConnection) -> None:
    """Empty every read model and reset the position to the start of the log, atomically."""
    async with conn.transaction():
        await conn.execute(
            "SELECT seq FROM projection_positions WHERE name = %s FOR UPDATE", (PROJECTION,)
        )
        await conn.execute(f"TRUNCATE {', '.join(TABLES)}")
        await conn.execute("UPDATE projection_positions SET seq = 0 WHERE name = %s", (PROJECTION,))
