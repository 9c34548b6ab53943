"""The engine's reads in Postgres: BM25 postings, passage vectors, observation rows, messages.

The lexicon, the passages and the observations are the memory projections' tables (see the
projector's ``lexicon`` and ``passages``). BM25 is computed here with the constants it was
indexed with; each query term reads at most ``POSTINGS`` postings, the strongest first, so a
question's common words cost a bounded read however many documents hold them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool
from pydantic import TypeAdapter

from mnemo_context.ports import Confinement, ObservationRow, PassageHit
from mnemo_runtime.pg import literal_cursor
from mnemo_runtime.vectors.pgvector import vector_literal
from mnemo_runtime.vectors.ports import Scope, VectorLike
from mnemo_schema.context_queries import ContextMessage

Row = dict[str, Any]
# BM25 constants of the projector's lexicon (k1, b).
K1, B = 1.2, 0.75
# Postings read per query term, strongest first; and query terms kept, rarest first.
POSTINGS = 400
MAX_TERMS = 32
# How many earlier turns of its session a message's preceding turn is looked for among.
LOOKBACK = 8

# Each query term's document frequency is looked up on its own (a lateral index probe), never
# by joining the workspace's whole vocabulary.
_TERMS = f"""
q AS (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %(q)s))),
st AS (SELECT docs::float8 AS n, length::float8 / greatest(docs, 1) AS avgdl FROM search_docs
       WHERE workspace = %(ws)s AND kind = %(kind)s::"char"),
w AS (SELECT q.term, ln(1 + (st.n - f.df + 0.5) / (f.df + 0.5)) AS idf
      FROM q CROSS JOIN st CROSS JOIN LATERAL (SELECT df FROM search_df
          WHERE workspace = %(ws)s AND kind = %(kind)s::"char" AND term = q.term) AS f
      WHERE f.df > 0 ORDER BY idf DESC LIMIT {MAX_TERMS})
"""
_WEIGHT = (
    f"w.idf * p.tf * {K1 + 1} / (p.tf + {K1} * (1 - {B} + {B} * p.dl / greatest(st.avgdl, 1)))"
)
# Documents are scored on their postings alone; only the best few are then joined to their rows.
_TOP = "top AS (SELECT doc, part, sum(s) AS score FROM hits GROUP BY doc, part ORDER BY score DESC LIMIT %(pre)s)"
_BY_OWNER = f"""
SELECT p.doc, p.part, {_WEIGHT} AS s
FROM w CROSS JOIN st CROSS JOIN unnest(%(owners)s::text[]) AS o(owner)
CROSS JOIN LATERAL (SELECT doc, part, tf, dl FROM search_terms t WHERE t.workspace = %(ws)s
    AND t.kind = %(kind)s::"char" AND t.owner = o.owner AND t.term = w.term
    ORDER BY t.impact DESC LIMIT {POSTINGS}) AS p
"""
_ANY_OWNER = f"""
SELECT p.doc, p.part, {_WEIGHT} AS s
FROM w CROSS JOIN st
CROSS JOIN LATERAL (SELECT doc, part, tf, dl FROM search_terms t WHERE t.workspace = %(ws)s
    AND t.kind = %(kind)s::"char" AND t.term = w.term ORDER BY t.impact DESC LIMIT {POSTINGS}) AS p
"""
_PASSAGE_COLS = (
    "p.message_id, p.passage, p.peer_id, p.created_at, p.start_char, p.end_char, p.parts"
)
_OBS_COLS = (
    "o.id, o.level, o.content, o.observer, o.observed, o.session_id, o.created_at,"
    " o.observed_at, o.premise_ids, o.times_derived, o.token_count,"
    " o.source_message_ids || coalesce((SELECT array_agg(DISTINCT s) FROM observations pr,"
    " unnest(pr.source_message_ids) AS s WHERE pr.workspace = o.workspace"
    " AND pr.id = ANY(o.premise_ids)), '{}') AS sources"
)
_MSG_JSON = (
    "json_build_object('id', {t}.id, 'content', {t}.content, 'peer_id', {t}.peer_id,"
    " 'session_id', {t}.session_id, 'workspace_id', {t}.workspace, 'metadata', {t}.metadata,"
    " 'created_at', {t}.created_at, 'token_count', {t}.token_count)"
)
_MESSAGE = TypeAdapter(ContextMessage)


def _passage(r: Row, score: float) -> PassageHit:
    return PassageHit(
        message_id=r["message_id"], passage=r["passage"], score=score, peer_id=r["peer_id"],
        created_at=r["created_at"], start=r["start_char"], end=r["end_char"], parts=r["parts"],
    )  # fmt: skip


def _observation(r: Row) -> ObservationRow:
    return ObservationRow(
        id=r["id"], level=r["level"], content=r["content"], observer=r["observer"],
        observed=r["observed"], session_id=r["session_id"], created_at=r["created_at"],
        observed_at=r["observed_at"], premise_ids=tuple(r["premise_ids"] or ()),
        source_message_ids=tuple(dict.fromkeys(r["sources"] or ())),
        times_derived=r["times_derived"], token_count=r["token_count"],
    )  # fmt: skip


def _messages_where(alias: str, confine: Confinement) -> tuple[str, dict[str, Any]]:
    """Conditions on a message (``m``) or on a passage (``p``, whose message is looked up for
    a caller's filter)."""
    sql = ""
    params: dict[str, Any] = {}
    if confine.sessions is not None:
        sql += f" AND {alias}.session_id = ANY(%(sessions)s)"
        params["sessions"] = sorted(confine.sessions)
    if confine.messages is not None:
        cond, values = confine.messages
        if alias == "m":
            sql += f" AND {cond}"
        else:
            sql += (
                " AND EXISTS (SELECT 1 FROM messages m WHERE m.workspace = p.workspace"
                f" AND m.id = p.message_id AND {cond})"
            )
        params.update(values)
    return sql, params


def _observations_where(
    confine: Confinement, levels: Sequence[str] | None = None
) -> tuple[str, dict[str, Any]]:
    """Conditions on an observation (``o``): resting on the allowed sessions alone, of the
    levels asked, and the caller's filter."""
    sql = ""
    params: dict[str, Any] = {}
    if confine.sessions is not None:
        sql += (
            " AND o.source_sessions <@ %(sessions)s::text[] AND cardinality(o.source_sessions) > 0"
        )
        params["sessions"] = sorted(confine.sessions)
    if levels:
        sql += " AND o.level = ANY(%(levels)s)"
        params["levels"] = list(levels)
    if confine.observations is not None:
        cond, values = confine.observations
        sql += f" AND {cond}"
        params.update(values)
    return sql, params


def _pairs(scopes: Sequence[Scope]) -> dict[str, list[str]]:
    return {"observers": [s.observer for s in scopes], "observeds": [s.observed for s in scopes]}


class PostgresEvidence:
    """EvidenceReads over the projections' tables; a table not made yet reads as empty."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def _all(self, sql: str, params: dict[str, Any], literal: bool = False) -> list[Row]:
        """Rows of ``sql``: prepared, or (``literal``) with its values in its text, planned for
        them (``pg.literal_cursor``)."""
        try:
            async with self._pool.connection() as conn:
                if literal:
                    planned = literal_cursor(conn)
                    await planned.execute(sql, params)
                    return await planned.fetchall()  # type: ignore[return-value]
                cur = await conn.execute(sql, params)
                return await cur.fetchall()  # type: ignore[return-value]
        except psycopg.errors.UndefinedTable:
            return []  # the projection that writes it has not started yet

    async def peer_names(self, ws: str) -> dict[str, list[str]]:
        rows = await self._all(
            "SELECT id, metadata->>'name' AS name FROM peers WHERE workspace = %(ws)s", {"ws": ws}
        )
        return {r["id"]: [r["name"]] if r["name"] else [] for r in rows}

    async def lexical_passages(
        self,
        ws: str,
        query: str,
        *,
        senders: Sequence[str] | None,
        observer: str | None,
        confine: Confinement,
        limit: int,
    ) -> list[PassageHit]:
        where, params = _messages_where("p", confine)
        if observer is not None:
            where += " AND %(observer)s = ANY(p.observers)"
            params["observer"] = observer
        hits = _ANY_OWNER if senders is None else _BY_OWNER
        rows = await self._all(
            f"WITH {_TERMS}, hits AS ({hits}), {_TOP}"
            f" SELECT {_PASSAGE_COLS}, t.score FROM top t JOIN message_passages p"
            " ON p.workspace = %(ws)s AND p.message_id = t.doc AND p.passage = t.part"
            f" WHERE true{where} ORDER BY t.score DESC LIMIT %(limit)s",
            {"ws": ws, "kind": "m", "q": query, "owners": list(senders or ()), "limit": limit,
             "pre": limit * (8 if confine.messages else 2 if where else 1), **params},
        )  # fmt: skip
        return [_passage(r, float(r["score"])) for r in rows]

    async def dense_passages(
        self,
        ws: str,
        vector: VectorLike,
        model: str,
        *,
        sender: str | None,
        observer: str | None,
        confine: Confinement,
        limit: int,
    ) -> list[PassageHit]:
        where, params = _messages_where("p", confine)
        if sender is not None:
            where += " AND p.peer_id = %(sender)s"
            params["sender"] = sender
        if observer is not None:
            where += " AND %(observer)s = ANY(p.observers)"
            params["observer"] = observer
        # Planned for these values (never a generic plan): a small workspace is read by its
        # B-tree and sorted exactly, a large one through the graph with an iterative scan.
        rows = await self._all(
            f"SELECT {_PASSAGE_COLS}, -(p.embedding <#> %(v)s::halfvec) AS score"
            " FROM message_passages p WHERE p.workspace = %(ws)s AND p.embedding_model = %(model)s"
            f"{where} ORDER BY p.embedding <#> %(v)s::halfvec LIMIT %(limit)s",
            {"ws": ws, "v": vector_literal(vector), "model": model, "limit": limit, **params},
            literal=True,
        )
        hits = [_passage(r, float(r["score"])) for r in rows]
        hits.sort(key=lambda h: -h.score)  # an iterative scan is nearly, not strictly, ordered
        return hits

    async def lexical_observations(
        self,
        ws: str,
        query: str,
        scopes: Sequence[Scope],
        *,
        levels: Sequence[str] | None,
        confine: Confinement,
        limit: int,
    ) -> list[tuple[str, float]]:
        if not scopes:
            return []
        where, params = _observations_where(confine, levels)
        rows = await self._all(
            f"WITH {_TERMS}, hits AS ({_BY_OWNER}), {_TOP}"
            " SELECT t.doc AS id, t.score FROM top t JOIN observations o"
            " ON o.workspace = %(ws)s AND o.id = t.doc AND o.deleted_at IS NULL"
            f" WHERE true{where} ORDER BY t.score DESC LIMIT %(limit)s",
            {"ws": ws, "kind": "o", "q": query, "limit": limit, "pre": limit * 2,
             "owners": [f"{s.observer} {s.observed}" for s in scopes], **params},
        )  # fmt: skip
        return [(r["id"], float(r["score"])) for r in rows]

    async def observation_rows(
        self,
        ws: str,
        ids: Sequence[str],
        message_ids: Sequence[str],
        scopes: Sequence[Scope],
        *,
        levels: Sequence[str] | None,
        confine: Confinement,
    ) -> tuple[list[ObservationRow], list[tuple[str, str]]]:
        if not (ids or message_ids) or not scopes:
            return [], []
        where, params = _observations_where(confine, levels)
        # One read: each observation once, by its key, whether a list found it or it cites a
        # message found. From the few source rows of the messages found, not a plain join: a
        # planner without statistics yet (a new, fast-growing table, before autovacuum's next
        # look) scanned the workspace's observations and probed the sources for each, 0.5 s
        # instead of 1 ms; the LIMIT keeps the lookup from being flattened.
        rows = await self._all(
            "WITH wanted AS (SELECT id, array_agg(cited) FILTER (WHERE cited IS NOT NULL) AS mids"
            " FROM (SELECT s.observation_id AS id, s.source_id AS cited FROM observation_sources s"
            " WHERE s.workspace = %(ws)s AND s.source_kind = 'message'"
            " AND s.source_id = ANY(%(mids)s::text[])"
            " UNION ALL SELECT unnest(%(ids)s::text[]), NULL) AS x GROUP BY id)"
            f" SELECT {_OBS_COLS}, w.mids AS cited FROM wanted w CROSS JOIN LATERAL"
            " (SELECT * FROM observations o1 WHERE o1.workspace = %(ws)s AND o1.id = w.id"
            " LIMIT 1) o"
            " WHERE o.deleted_at IS NULL AND (o.observer, o.observed) IN"
            f" (SELECT * FROM unnest(%(observers)s::text[], %(observeds)s::text[])){where}"
            " ORDER BY o.created_at, o.id",
            {"ws": ws, "ids": list(ids), "mids": list(message_ids), **_pairs(scopes), **params},
        )
        cites = [(mid, r["id"]) for r in rows for mid in r["cited"] or ()]
        return [_observation(r) for r in rows], cites

    async def message_rows(
        self,
        ws: str,
        ids: Sequence[str],
        *,
        representation: tuple[str, str] | None,
        confine: Confinement,
        peer_id: str | None,
    ) -> list[tuple[ContextMessage, ContextMessage | None]]:
        if not ids:
            return []
        where, params = _messages_where("m", confine)
        if peer_id is not None:
            where += " AND m.peer_id = %(peer)s"
            params["peer"] = peer_id
        if representation is not None:
            observer, observed = representation
            where += " AND m.representations @> %(pair)s::jsonb"
            params["pair"] = json.dumps([{"observer": observer, "observed": observed}])
        rows = await self._all(
            f"SELECT {_MSG_JSON.format(t='m')}::text AS message,"
            # The nearest earlier turn of another speaker, among the few turns before it: a long
            # run of one speaker's messages has no turn it answers.
            f" (SELECT {_MSG_JSON.format(t='x')}::text FROM (SELECT * FROM messages y"
            " WHERE y.workspace = m.workspace AND y.session_id = m.session_id AND y.seq < m.seq"
            f" ORDER BY y.seq DESC LIMIT {LOOKBACK}) AS x WHERE x.peer_id <> m.peer_id"
            " ORDER BY x.seq DESC LIMIT 1) AS previous"
            f" FROM messages m WHERE m.workspace = %(ws)s AND m.id = ANY(%(ids)s){where}",
            {"ws": ws, "ids": list(ids), **params},
        )
        return [
            (
                _MESSAGE.validate_json(r["message"]),
                _MESSAGE.validate_json(r["previous"]) if r["previous"] else None,
            )
            for r in rows
        ]

    async def newest(self, ws: str, message_ids: Sequence[str]) -> datetime | None:
        """The latest time among ``message_ids``' passages (what "now" is when not given)."""
        rows = await self._all(
            "SELECT max(created_at) AS at FROM message_passages"
            " WHERE workspace = %(ws)s AND message_id = ANY(%(ids)s)",
            {"ws": ws, "ids": list(message_ids)},
        )
        return rows[0]["at"] if rows else None
