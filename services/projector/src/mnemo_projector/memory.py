"""The memory read model: observations and provenance in Postgres, their vectors in the index,
peer cards, session summaries and dreams (``formed``).

Each observation is embedded when projected, each distinct text once among those seen lately
(``memory_vectors.RecentVectors``); a replay re-embeds, which is how a new embedding model takes
over. Exact duplicates (same normalised text, level and representation) and near duplicates
(cosine distance under ``near_distance``) raise ``times_derived`` of the kept observation
instead of adding a row, and the duplicate's id becomes an alias of it. A near
duplicate must also name the same names, numbers and dates.

Every read the projection makes runs in its own transaction and every check reads the log
(``grounding``), so what it holds depends on the log alone: ``mnemo rebuild --memory`` replays
it to the same state. An erasure's retractions (``ObservationsErased``, ``SummariesErased``, the
deletions) are events of the log too, applied in its order: a replay reaches the erased state.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from nats.aio.client import Client as NATS

from mnemo_projector import lexicon
from mnemo_projector.cited import LogMessages
from mnemo_projector.formed import apply_formed, erase_observations, mark_formed
from mnemo_projector.grounding import CitedMessages, resolve, verdicts
from mnemo_projector.memory_vectors import IndexUpkeep, RecentVectors
from mnemo_runtime import positions
from mnemo_runtime.embeddings import Embedder
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Connection
from mnemo_runtime.tokens import TokenCounter
from mnemo_runtime.vectors import ObservationPayload, Scope, SearchFilters, VectorIndex, VectorPoint
from mnemo_schema import subjects
from mnemo_schema.events import Event
from mnemo_schema.grounding import content_key, salient_tokens
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationsErased,
    ObservationWritten,
    PeerCardUpdated,
)

log = get_logger("mnemo.projector.memory")


@dataclass
class _Batch:
    points: list[VectorPoint] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    documents: list[lexicon.Document] = field(default_factory=list)
    unindexed: list[tuple[str, str]] = field(default_factory=list)  # (workspace, id)
    # canonical id -> (scope, level, vector, salient tokens) of observations kept in this batch
    kept: dict[str, tuple[Scope, str, Any, frozenset[str]]] = field(default_factory=dict)


class MemoryProjection:
    """Projects observations, their deletions and erasures, peer cards; summaries; dreams."""

    name = positions.MEMORY
    applied_subject = subjects.MEMORY_PROJECTION_APPLIED
    pipelined = False  # apply() reads row counts and lookups back as it goes
    fair = True  # one workspace's backlog must not hold back another's (see lines)

    def __init__(
        self,
        embedder: Embedder,
        index: VectorIndex,
        nc: NATS | None = None,
        near_distance: float = 0.05,
        upkeep: IndexUpkeep | None = None,
        cited: CitedMessages | None = None,
    ) -> None:
        self._embedder = embedder
        self._vectors = RecentVectors(embedder)
        self._index = index
        if cited is None:
            assert nc is not None, "the cited messages are read from the log"
            cited = LogMessages(nc)
        self._cited = cited
        self._near = near_distance
        self._upkeep = upkeep or IndexUpkeep()
        self._counter = TokenCounter()

    def filters(self, partition: int) -> list[str]:
        """Memory events (observations, cards), summaries, dreams, and the entity events that
        erase what memory formation made of a workspace, session or peer."""
        return [
            subjects.observation_filter(partition),
            subjects.summary_filter(partition),
            subjects.dream_filter(partition),
            *subjects.erasure_filters(partition),
        ]

    async def setup(self, conn: Connection) -> None:
        del conn  # the tables come from the migrations
        await self._index.ensure(self._embedder.dimension, self._embedder.model_name)

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> None:  # noqa: ARG002
        """Never one statement: applying embeds and reads back."""
        return None

    async def apply(self, conn: Connection, batch: Sequence[tuple[int, Event]]) -> None:
        written = [(s, e) for s, e in batch if isinstance(e, ObservationWritten)]
        checked = await verdicts(conn, [e for _, e in written], self._cited)
        contents = [e.content for _, e in written]
        vectors = await self._vectors.embed(contents)
        counts = self._counter.count_many(contents)
        by_event = {
            id(e): (v, vec, n)
            for (_, e), v, vec, n in zip(written, checked, vectors, counts, strict=True)
        }
        work = _Batch()
        for seq, event in batch:
            if isinstance(event, ObservationWritten):
                verdict, vector, tokens = by_event[id(event)]
                if verdict is not None:
                    await _reject(conn, seq, event, str(verdict))
                    continue
                await self._write(conn, seq, event, vector, tokens, work)
            elif isinstance(event, ObservationDeleted):
                await self._delete(conn, event, work)
            elif isinstance(event, ObservationsErased):
                gone = await erase_observations(conn, event)
                work.deleted.extend(gone)
                work.unindexed.extend((event.workspace, oid) for oid in gone)
            elif isinstance(event, PeerCardUpdated):
                await conn.execute(
                    "INSERT INTO peer_cards (workspace, observer, observed, card, origin, seq,"
                    " updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (workspace, observer, observed) DO UPDATE SET card = EXCLUDED.card,"
                    " origin = EXCLUDED.origin, seq = EXCLUDED.seq, updated_at = EXCLUDED.updated_at"
                    " WHERE peer_cards.seq < EXCLUDED.seq",
                    (
                        event.workspace,
                        event.observer,
                        event.observed,
                        event.card,
                        event.origin,
                        seq,
                        event.occurred_at,
                    ),
                )
            else:
                await apply_formed(conn, seq, event)
        await mark_formed(conn, [e for _, e in written])
        await lexicon.index(conn, work.documents)
        for ws, oid in work.unindexed:
            await lexicon.unindex(conn, ws, "o", [oid])
        # In the batch's transaction when the index lives in Postgres. Otherwise it is written
        # before the commit, idempotently by id, so a rolled-back batch only leaves points that
        # the replay rewrites (and reads filter by row).
        if work.points:
            await self._index.upsert(work.points, conn=conn)
            self._upkeep.written(len(work.points), time.monotonic())
        if work.deleted:
            await self._index.delete(work.deleted, conn=conn)

    async def idle(self) -> None:
        """Between batches: build the index's search structures when they are due."""
        if not self._upkeep.due(time.monotonic()):
            return
        started = time.monotonic()
        log.info("memory.index_optimize_started", new_points=self._upkeep.pending)
        built = await self._index.optimize()
        self._upkeep.done()
        log.info("memory.index_optimized", built=built, seconds=time.monotonic() - started)

    async def _write(
        self,
        conn: Connection,
        seq: int,
        e: ObservationWritten,
        vector: Any,
        tokens: int,
        work: _Batch,
    ) -> None:
        scope = Scope(e.workspace, e.observer, e.observed)
        cur = await conn.execute(
            "SELECT 1 FROM observations WHERE workspace = %s AND id = %s UNION ALL"
            " SELECT 1 FROM observation_aliases WHERE workspace = %s AND alias_id = %s",
            (e.workspace, e.observation_id, e.workspace, e.observation_id),
        )
        if await cur.fetchone() is not None:
            return  # the same observation again (a redelivered message): nothing new
        same = await self._duplicate_of(conn, e, scope, vector, work)
        if same is not None:
            await conn.execute(
                "UPDATE observations SET times_derived = times_derived + 1"
                " WHERE workspace = %s AND id = %s",
                (e.workspace, same),
            )
            await conn.execute(
                "INSERT INTO observation_aliases (workspace, alias_id, canonical_id)"
                " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (e.workspace, e.observation_id, same),
            )
            return
        premises = (
            list((await resolve(conn, scope, e.premise_ids)).values()) if e.premise_ids else []
        )
        premises = sorted(set(premises) | {p for p in e.premise_ids if p in work.kept})
        # The sessions it rests on: its own for an explicit one ('' for none), its premises'
        # for a derived one (read in this transaction, which sees the batch's own rows).
        cur = await conn.execute(
            "INSERT INTO observations (workspace, id, observer, observed, session_id, level, content,"
            " content_key, source_message_ids, source_span, premise_ids, confidence, pattern_type,"
            " origin, observed_at, created_at, seq, embedding_model, embedding_dim, token_count,"
            " source_sessions)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " %s, CASE WHEN cardinality(%s::text[]) = 0 THEN ARRAY[coalesce(%s, '')] ELSE"
            " (SELECT coalesce(array_agg(DISTINCT s ORDER BY s), '{}') FROM observations p,"
            " unnest(p.source_sessions) AS s WHERE p.workspace = %s AND p.id = ANY(%s)) END)"
            " ON CONFLICT DO NOTHING",
            (
                e.workspace,
                e.observation_id,
                e.observer,
                e.observed,
                e.session_id,
                e.level,
                e.content,
                content_key(e.content),
                e.source_message_ids,
                e.source_span,
                premises,
                e.confidence,
                e.pattern_type,
                e.origin,
                e.observed_at,
                e.occurred_at,
                seq,
                self._embedder.model_name,
                self._embedder.dimension,
                tokens,
                premises,
                e.session_id,
                e.workspace,
                premises,
            ),
        )
        if cur.rowcount != 1:
            return  # already projected (a replayed batch)
        edges = [("message", m) for m in e.source_message_ids] + [
            ("observation", p) for p in premises
        ]
        if edges:
            async with conn.cursor() as c:
                await c.executemany(
                    "INSERT INTO observation_sources (workspace, observation_id, source_kind,"
                    " source_id, observer, observed) VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    [
                        (e.workspace, e.observation_id, kind, sid, e.observer, e.observed)
                        for kind, sid in edges
                    ],
                )
        payload = ObservationPayload(
            workspace=e.workspace,
            observer=e.observer,
            observed=e.observed,
            level=e.level,
            created_at=(e.observed_at or e.occurred_at).timestamp(),
            session_id=e.session_id,
        )
        work.points.append(VectorPoint(e.observation_id, vector, payload))
        work.documents.append(
            lexicon.Document(
                e.workspace,
                "o",
                lexicon.observation_owner(e.observer, e.observed),
                e.observation_id,
                0,
                e.content,
            )
        )
        work.kept[e.observation_id] = (scope, e.level, vector, salient_tokens(e.content))

    async def _duplicate_of(
        self, conn: Connection, e: ObservationWritten, scope: Scope, vector: Any, work: _Batch
    ) -> str | None:
        cur = await conn.execute(
            "SELECT id FROM observations WHERE workspace = %s AND observer = %s AND observed = %s"
            " AND level = %s AND content_key = %s AND deleted_at IS NULL",
            (e.workspace, e.observer, e.observed, e.level, content_key(e.content)),
        )
        row = await cur.fetchone()
        if row is not None:
            return str(row["id"])
        salient = salient_tokens(e.content)
        for oid, (s, level, v, tokens) in work.kept.items():
            close = 1.0 - float(np.dot(v, vector)) <= self._near
            if s == scope and level == e.level and close and tokens == salient:
                return oid
        hits = await self._index.search(
            vector,
            scope,
            limit=3,
            filters=SearchFilters.of(levels=[e.level]),
            max_distance=self._near,
        )
        for hit in hits:
            cur = await conn.execute(
                "SELECT content FROM observations WHERE workspace = %s AND id = %s"
                " AND deleted_at IS NULL",
                (e.workspace, hit.id),
            )
            row = await cur.fetchone()
            if row is not None and salient_tokens(row["content"]) == salient:
                return hit.id
        return None

    async def _delete(self, conn: Connection, e: ObservationDeleted, work: _Batch) -> None:
        scope = Scope(e.workspace, e.observer, e.observed)
        canonical = (await resolve(conn, scope, [e.observation_id])).get(
            e.observation_id, e.observation_id
        )
        await conn.execute(
            "UPDATE observations SET deleted_at = %s, delete_reason = %s"
            " WHERE workspace = %s AND id = %s AND observer = %s AND observed = %s"
            " AND deleted_at IS NULL",
            (e.occurred_at, e.reason, e.workspace, canonical, e.observer, e.observed),
        )
        # Beliefs resting on a deleted observation are re-examined by the next dream.
        await conn.execute(
            "UPDATE observations SET needs_review = true WHERE workspace = %s AND deleted_at IS NULL"
            " AND id IN (SELECT observation_id FROM observation_sources WHERE workspace = %s"
            " AND source_kind = 'observation' AND source_id = %s)",
            (e.workspace, e.workspace, canonical),
        )
        work.deleted.append(canonical)
        work.unindexed.append((e.workspace, canonical))


async def _reject(conn: Connection, seq: int, e: ObservationWritten, reason: str) -> None:
    log.warning("memory.rejected", observation=e.observation_id, reason=reason)
    await conn.execute(
        "INSERT INTO observation_rejections (workspace, id, seq, reason) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        (e.workspace, e.observation_id, seq, reason),
    )
