"""Postgres tables of the representation store (written by the memory projection only)."""

from __future__ import annotations

from psycopg import AsyncConnection

MEMORY_PROJECTION = "memory"

DDL = """
CREATE TABLE IF NOT EXISTS projection_positions (
    name text PRIMARY KEY,
    seq bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS observations (
    workspace text NOT NULL,
    id text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    session_id text,
    level text NOT NULL,
    content text NOT NULL,
    content_key text NOT NULL,
    source_message_ids text[] NOT NULL DEFAULT '{}',
    source_span text,
    premise_ids text[] NOT NULL DEFAULT '{}',
    confidence real,
    pattern_type text,
    origin text NOT NULL,
    observed_at timestamptz,
    created_at timestamptz NOT NULL,
    seq bigint NOT NULL,
    times_derived integer NOT NULL DEFAULT 1,
    needs_review boolean NOT NULL DEFAULT false,
    deleted_at timestamptz,
    delete_reason text,
    embedding_model text,
    embedding_dim integer,
    token_count integer,
    PRIMARY KEY (workspace, id)
);
-- Tokens of content (libs/runtime tokens.py), counted once when projected, so a context packs
-- a slice without tokenising it. Null on rows projected before the column existed.
ALTER TABLE observations ADD COLUMN IF NOT EXISTS token_count integer;
CREATE INDEX IF NOT EXISTS observations_by_representation
    ON observations (workspace, observer, observed, seq) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS observations_exact_once
    ON observations (workspace, observer, observed, level, content_key) WHERE deleted_at IS NULL;
-- Words are searched through the lexical index (the projector's BM25 postings) now.
DROP INDEX IF EXISTS observations_fts;
-- A written observation that duplicated an existing one points at it here, so citations of
-- either id resolve to the row that was kept.
CREATE TABLE IF NOT EXISTS observation_aliases (
    workspace text NOT NULL,
    alias_id text NOT NULL,
    canonical_id text NOT NULL,
    PRIMARY KEY (workspace, alias_id)
);
-- The provenance DAG: derived observation -> premise observation, explicit -> message.
CREATE TABLE IF NOT EXISTS observation_sources (
    workspace text NOT NULL,
    observation_id text NOT NULL,
    source_kind text NOT NULL CHECK (source_kind IN ('message', 'observation')),
    source_id text NOT NULL,
    PRIMARY KEY (workspace, observation_id, source_kind, source_id)
);
CREATE INDEX IF NOT EXISTS observation_sources_reverse
    ON observation_sources (workspace, source_kind, source_id);
CREATE TABLE IF NOT EXISTS peer_cards (
    workspace text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    card text[] NOT NULL,
    origin text NOT NULL,
    seq bigint NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, observer, observed)
);
CREATE TABLE IF NOT EXISTS observation_rejections (
    workspace text NOT NULL,
    id text NOT NULL,
    seq bigint NOT NULL,
    reason text NOT NULL,
    PRIMARY KEY (workspace, id)
);
"""

TABLES = (
    "observations", "observation_aliases", "observation_sources", "observation_rejections",
    "peer_cards",
)  # fmt: skip


async def create_memory_tables(conn: AsyncConnection) -> None:
    """Create the tables if missing (idempotent; serialised by an advisory lock)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(872362)")
        await conn.execute(DDL)
        await conn.execute(
            "INSERT INTO projection_positions (name, seq) VALUES (%s, 0) ON CONFLICT DO NOTHING",
            (MEMORY_PROJECTION,),
        )
