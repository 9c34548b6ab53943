"""The passage projection: every message cut into passages, embedded once and indexed by words.

A message of up to ``MAX_PASSAGE_TOKENS`` tokens is one passage; a longer one is cut into
windows of that many tokens, each overlapping the previous by ``OVERLAP_TOKENS``, so a fact that
straddles a cut is whole in one of them. MiniLM reads up to 256 tokens, but it was trained on
sentences and short paragraphs: a window of 128 tokens is matched more sharply than one that
fills the model (on the tuning chats of BEAM, whose messages run to thousands of tokens, the
message ranking by MiniLM alone went from .601 to .618 Recall@10; 96 and 64 tokens did no
better). Each passage is embedded as ``"<sender>: <text>"`` and its vector stored with the
model's name; its words go into the lexical index (``lexicon``). Retrieval scores a message by
its best passage.

What the vectors were made with, the model and the cut (``vectors_of``), is recorded: when the
process embeds otherwise, the projection drops what it made and replays the log, so vectors of
two kinds are never searched together.
Erasure follows the messages: a deleted message, peer, session or workspace takes its passages
and their postings along.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemo_projector import lexicon
from mnemo_projector.sender_graphs import SenderGraphs, drop_graphs, forget_missing
from mnemo_runtime import positions
from mnemo_runtime.embeddings import Embedder
from mnemo_runtime.logging import get_logger
from mnemo_runtime.migrate import schema_lock
from mnemo_runtime.pg import Connection
from mnemo_runtime.pg_partitions import ensure_split, partition_by, partitions_ddl
from mnemo_runtime.tokens import token_spans
from mnemo_runtime.vectors.pgvector import vector_literal
from mnemo_schema import subjects
from mnemo_schema.events import (
    Event,
    MessageDeleted,
    MessagePosted,
    PeerDeleted,
    SessionDeleted,
    WorkspaceDeleted,
)

Erasure = SessionDeleted | WorkspaceDeleted | PeerDeleted | MessageDeleted

PASSAGES = positions.PASSAGES
MAX_PASSAGE_TOKENS = 128
OVERLAP_TOKENS = 32
log = get_logger("mnemo.projector.passages")


def split_passages(
    text: str, max_tokens: int = MAX_PASSAGE_TOKENS, overlap: int = OVERLAP_TOKENS
) -> list[tuple[int, int]]:
    """Character spans of ``text``'s passages: token windows overlapping by ``overlap``."""
    if not 0 <= overlap < max_tokens:
        raise ValueError("overlap must be smaller than the passage")
    spans = token_spans(text)
    if len(spans) <= max_tokens:
        return [(0, len(text))]
    out: list[tuple[int, int]] = []
    step = max_tokens - overlap
    for first in range(0, len(spans), step):
        last = min(first + max_tokens, len(spans)) - 1
        out.append((spans[first][0], spans[last][1]))
        if last == len(spans) - 1:
            break
    return out


def vectors_of(model: str) -> str:
    """What the passages' vectors are made with: ``model``, over passages cut as they are here."""
    return f"{model}, passages of {MAX_PASSAGE_TOKENS} tokens overlapping by {OVERLAP_TOKENS}"


def embedded_text(sender: str, passage: str) -> str:
    """What a passage's vector is computed from: its sender and its words."""
    return f"{sender}: {passage}"


# Searched within a workspace: the table is split by it (``pg_partitions``).
SPLIT_BY = ("workspace",)


def ddl(dimension: int) -> tuple[str, str]:
    """The passages' table, split by workspace (``pg_partitions``), and its indexes."""
    create = f"""
CREATE TABLE IF NOT EXISTS message_passages (
    workspace text NOT NULL,
    message_id text NOT NULL,
    passage integer NOT NULL,
    session_id text NOT NULL,
    peer_id text NOT NULL,
    observers text[] NOT NULL,
    seq bigint NOT NULL,
    created_at timestamptz NOT NULL,
    start_char integer NOT NULL,
    end_char integer NOT NULL,
    parts integer NOT NULL,
    embedding halfvec({dimension}),
    embedding_model text NOT NULL,
    PRIMARY KEY (workspace, message_id, passage)
) {partition_by(SPLIT_BY)};
{partitions_ddl("message_passages")}"""
    indexes = """
CREATE INDEX IF NOT EXISTS message_passages_by_sender ON message_passages (workspace, peer_id);
CREATE INDEX IF NOT EXISTS message_passages_by_session ON message_passages (workspace, session_id);
CREATE INDEX IF NOT EXISTS message_passages_hnsw ON message_passages
    USING hnsw (embedding halfvec_ip_ops) WITH (m = 16, ef_construction = 64);
"""
    return create, indexes


class PassageProjection:
    """Projects MessagePosted into passages, their vectors and postings; follows erasures."""

    name = PASSAGES
    applied_subject = subjects.PASSAGES_APPLIED
    pipelined = False  # apply() reads back which messages are new
    fair = True  # one workspace's backlog must not hold back another's (see lines)

    def __init__(self, embedder: Embedder, graphs: SenderGraphs | None = None) -> None:
        self._embedder = embedder
        self._graphs = graphs

    async def setup(self, conn: Connection) -> None:
        """Create the tables; start over from the log if they hold vectors made otherwise
        (another model, or messages cut otherwise)."""
        model, dim = vectors_of(self._embedder.model_name), self._embedder.dimension
        async with conn.transaction():
            # The lexicon and vector_indexes come from the migrations; the passages take the
            # model's dimension, so they are created here, under the lock of schema changes.
            await schema_lock(conn)
            cur = await conn.execute(
                "SELECT dimension, model FROM vector_indexes WHERE name = 'message_passages'"
            )
            row = await cur.fetchone()
            stored = None if row is None else (int(row["dimension"]), str(row["model"]))
            if stored is not None and stored != (dim, model):
                log.warning("passages.model_changed", stored=stored[1], model=model)
                await conn.execute("DROP TABLE IF EXISTS message_passages")
                await conn.execute("DELETE FROM search_terms WHERE kind = 'm'")
                await conn.execute("DELETE FROM search_df WHERE kind = 'm'")
                await conn.execute("DELETE FROM search_docs WHERE kind = 'm'")
                await positions.reset(conn, [PASSAGES])
            create, indexes = ddl(dim)
            # Made before passages were split by workspace: moved, in this transaction.
            await ensure_split(conn, "message_passages", SPLIT_BY, create, indexes)
            await conn.execute(
                "INSERT INTO vector_indexes (name, dimension, model)"
                " VALUES ('message_passages', %s, %s) ON CONFLICT (name) DO UPDATE"
                " SET dimension = EXCLUDED.dimension, model = EXCLUDED.model",
                (dim, model),
            )
            # The senders' own graphs went with a table made again.
            await forget_missing(conn)

    def filters(self, partition: int) -> list[str]:
        """Messages, and the entity events that erase them (a deleted workspace, session, peer or
        message)."""
        return [subjects.message_filter(partition), *subjects.erasure_filters(partition)]

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> None:  # noqa: ARG002
        """Never one statement: applying embeds and reads back."""
        return None

    async def idle(self) -> None:
        """Between batches: the graphs of senders grown large (``sender_graphs``), built in
        the background."""
        if self._graphs is not None:
            self._graphs.upkeep()

    async def apply(self, conn: Connection, batch: Sequence[tuple[int, Event]]) -> None:
        posted: list[tuple[int, MessagePosted]] = []
        for seq, event in batch:
            if isinstance(event, MessagePosted):
                posted.append((seq, event))
            elif isinstance(event, Erasure):
                # Erasures take effect in log order: what was posted before goes first.
                await self._write(conn, posted)
                posted = []
                await self._erase(conn, event)
        await self._write(conn, posted)
        if self._graphs is not None:
            self._graphs.upkeep()  # also under a load that leaves no partition idle

    async def _write(self, conn: Connection, posted: list[tuple[int, MessagePosted]]) -> None:
        if not posted:
            return
        cur = await conn.execute(
            "SELECT k.workspace, k.id FROM unnest(%s::text[], %s::text[]) AS k(workspace, id)"
            " WHERE EXISTS (SELECT 1 FROM message_passages p WHERE p.workspace = k.workspace"
            " AND p.message_id = k.id)",
            ([e.workspace for _, e in posted], [e.message_id for _, e in posted]),
        )
        done = {(r["workspace"], r["id"]) for r in await cur.fetchall()}
        rows: list[tuple[int, MessagePosted, int, int, int, int]] = []
        seen: set[tuple[str, str]] = set()
        for seq, e in posted:
            key = (e.workspace, e.message_id)
            if key in done or key in seen:
                continue  # a redelivered message: its passages exist
            seen.add(key)
            spans = split_passages(e.content)
            for part, (start, end) in enumerate(spans):
                rows.append((seq, e, part, start, end, len(spans)))
        if not rows:
            return
        texts = [embedded_text(e.peer_id, e.content[s:t]) for _, e, _, s, t, _ in rows]
        vectors = await self._embedder.embed(texts)
        await self._insert(conn, rows, vectors)
        await lexicon.index(
            conn,
            [
                lexicon.Document(e.workspace, "m", e.peer_id, e.message_id, part, e.content[s:t])
                for _, e, part, s, t, _ in rows
            ],
        )

    async def _insert(
        self,
        conn: Connection,
        rows: list[tuple[int, MessagePosted, int, int, int, int]],
        vectors: np.ndarray[Any, Any],
    ) -> None:
        model = self._embedder.model_name
        columns: list[list[Any]] = [[] for _ in range(13)]
        for (seq, e, part, start, end, parts), vector in zip(rows, vectors, strict=True):
            observers = sorted({r.observer for r in e.representations})
            values = (
                e.workspace,
                e.message_id,
                part,
                e.session_id,
                e.peer_id,
                "{" + ",".join(observers) + "}",
                seq,
                e.created_at,
                start,
                end,
                parts,
                vector_literal(vector),
                model,
            )
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        await conn.execute(
            "INSERT INTO message_passages (workspace, message_id, passage, session_id, peer_id,"
            " observers, seq, created_at, start_char, end_char, parts, embedding, embedding_model)"
            " SELECT w, m, p, s, peer, o::text[], q, c, a, b, n, v::halfvec, model FROM unnest("
            "%s::text[], %s::text[], %s::int[], %s::text[], %s::text[], %s::text[],"
            " %s::bigint[], %s::timestamptz[], %s::int[], %s::int[], %s::int[], %s::text[],"
            " %s::text[]) AS x(w, m, p, s, peer, o, q, c, a, b, n, v, model) ON CONFLICT DO NOTHING",
            columns,
        )

    async def _erase(self, conn: Connection, e: Erasure) -> None:
        if isinstance(e, WorkspaceDeleted):
            await drop_graphs(conn, e.workspace)
            await conn.execute("DELETE FROM message_passages WHERE workspace = %s", (e.workspace,))
            await lexicon.drop_workspace(conn, e.workspace, "m")
            return
        if isinstance(e, SessionDeleted):
            where, arg = "session_id = %s", e.session_id
        elif isinstance(e, PeerDeleted):
            await drop_graphs(conn, e.workspace, e.peer_id)
            where, arg = "peer_id = %s", e.peer_id
        else:
            where, arg = "message_id = %s", e.message_id
        cur = await conn.execute(
            f"DELETE FROM message_passages WHERE workspace = %s AND {where} RETURNING message_id",
            (e.workspace, arg),
        )
        gone = sorted({r["message_id"] for r in await cur.fetchall()})
        await lexicon.unindex(conn, e.workspace, "m", gone)
