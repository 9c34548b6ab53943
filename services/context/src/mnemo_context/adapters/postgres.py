"""The read models in Postgres, queried through indexes only: no query scans a session."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, get_args

import orjson
from pydantic import TypeAdapter

from mnemo_context.domain import Observation
from mnemo_context.ports import Opening, StoredSummary, WindowPage
from mnemo_runtime.pg import Pool
from mnemo_schema.context_queries import ContextMessage, ContextSummary
from mnemo_schema.retrieval import (
    MessagesQuery,
    MessagesReply,
    StoredMessage,
    StoredObservation,
    StoredQuery,
    StoredReply,
)
from mnemo_schema.summaries import SummaryType

MSG_COLS = (
    "workspace AS workspace_id, id, session_id, seq, peer_id, content, metadata, token_count,"
    " created_at"
)
# A session's newest summary of each type: one probe of the key per type, however many
# summaries the session has kept (a long session keeps thousands).
_KINDS = ", ".join(f"('{kind}')" for kind in get_args(SummaryType))
_NEWEST = (
    f"(VALUES {_KINDS}) AS t(kind) CROSS JOIN LATERAL (SELECT * FROM summaries s"
    " WHERE s.workspace = %(ws)s AND s.session_id = %(sid)s AND s.summary_type = t.kind"
    " ORDER BY s.seq DESC LIMIT 1) AS newest"
)
# The oldest coverage among a session's newest summary of each type; 0 without summaries.
_SUMMARIZED = f"SELECT coalesce(min(message_seq), 0)::bigint AS after FROM {_NEWEST}"
MSG_JSON = ", ".join(
    f"'{key}', {column}"
    for key, column in (
        ("id", "id"),
        ("content", "content"),
        ("peer_id", "peer_id"),
        ("session_id", "session_id"),
        ("workspace_id", "workspace"),
        ("metadata", "metadata"),
        ("created_at", "created_at"),
        ("token_count", "token_count"),
    )
)
OBS_COLS = "id, level, content, token_count"
LIVE = "workspace = %s AND observer = %s AND observed = %s AND deleted_at IS NULL"

Row = dict[str, Any]


# Validated in one call in pydantic-core: cheaper per row than building models in Python.
_MESSAGES = TypeAdapter(list[ContextMessage])
_SUMMARY_COLS = (
    "content",
    "message_id",
    "summary_type",
    "created_at",
    "token_count",
    "message_seq",
)
_SUMMARIES_JSON = (
    "(SELECT coalesce(json_agg(json_build_array("
    + ", ".join(f"newest.{c}" for c in _SUMMARY_COLS)
    + f")), '[]')::text FROM {_NEWEST})"
)
_CARD = (
    "(SELECT card FROM peer_cards WHERE workspace = %(ws)s AND observer = %(observer)s"
    " AND observed = %(observed)s)"
)


_STORED = TypeAdapter(list[StoredObservation])
_STORED_COLS = ", ".join(
    f"o.{c}"
    for c in (
        *("id", "level", "content", "observer", "observed", "session_id", "created_at"),
        *("observed_at", "premise_ids", "source_message_ids", "source_sessions"),
        *("times_derived", "token_count", "needs_review", "confidence", "pattern_type"),
    )
)


def _stored_where(q: StoredQuery) -> tuple[str, dict[str, Any]]:
    """``StoredQuery``'s conditions on a live observation ``o``."""
    sql = " AND o.deleted_at IS NULL"
    params: dict[str, Any] = {}
    if q.observer is not None:
        sql += " AND o.observer = %(observer)s AND o.observed = %(observed)s"
        params |= {"observer": q.observer, "observed": q.observed}
    if q.levels:
        sql += " AND o.level = ANY(%(levels)s)"
        params["levels"] = list(q.levels)
    if q.sessions is not None:
        sql += " AND o.source_sessions <@ %(sessions)s::text[]"
        sql += " AND cardinality(o.source_sessions) > 0"
        params["sessions"] = sorted(set(q.sessions))
    return sql, params


_STORED_MESSAGES = TypeAdapter(list[StoredMessage])
_KEYED_COLS = "m.id, m.session_id, m.peer_id, m.content, m.created_at, m.seq, m.representations"


def _like(text: str) -> str:
    """``text`` as an ILIKE pattern matching it anywhere, its wildcards taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _messages_sql(q: MessagesQuery) -> tuple[str, dict[str, Any]]:
    """``MessagesQuery``'s statement: visible messages (``m``), oldest first."""
    visible = "m.workspace = %(ws)s"
    params: dict[str, Any] = {"limit": q.limit}
    if q.observer is not None:
        visible += " AND m.representations @> %(pair)s::jsonb"
        params["pair"] = json.dumps([{"observer": q.observer, "observed": q.observed}])
    if q.sessions is not None:
        visible += " AND m.session_id = ANY(%(sessions)s)"
        params["sessions"] = sorted(set(q.sessions))
    if q.around is not None:
        # seq is a log position shared with other sessions: neighbours are counted, not
        # subtracted.
        same = (
            f"SELECT {_KEYED_COLS} FROM messages m, anchor a WHERE {visible}"
            " AND m.session_id = a.session_id"
        )
        sql = (
            "WITH anchor AS (SELECT session_id, seq FROM messages WHERE workspace = %(ws)s"
            " AND id = %(around)s)"
            f" ({same} AND m.seq < a.seq ORDER BY m.seq DESC LIMIT %(window)s)"
            f" UNION ALL ({same} AND m.seq = a.seq)"
            f" UNION ALL ({same} AND m.seq > a.seq ORDER BY m.seq LIMIT %(window)s)"
            " ORDER BY seq"
        )
        return sql, params | {"around": q.around, "window": q.window}
    if q.ids is not None:
        cond = " AND m.id = ANY(%(ids)s)"
        params["ids"] = q.ids
    elif q.containing is not None:
        cond = " AND m.content ILIKE %(like)s"
        params["like"] = _like(q.containing)
    else:
        cond = " AND m.created_at >= %(start)s AND m.created_at < %(end)s"
        params |= {"start": q.created_from, "end": q.created_before}
    sql = (
        f"SELECT {_KEYED_COLS} FROM messages m WHERE {visible}{cond}"
        " ORDER BY m.created_at, m.seq LIMIT %(limit)s"
    )
    return sql, params


def to_messages(rows: list[Row]) -> list[ContextMessage]:
    """messages rows (selected with MSG_COLS) as reply messages."""
    return _MESSAGES.validate_python(rows)


def _summary(r: Row) -> StoredSummary:
    summary = ContextSummary(
        content=r["content"],
        message_id=r["message_id"],
        summary_type=r["summary_type"],
        created_at=r["created_at"],
        token_count=r["token_count"],
    )
    return StoredSummary(summary, r["message_seq"])


def _page(row: Row, budget: int) -> WindowPage:
    return WindowPage(
        messages=_MESSAGES.validate_json(row["window"]),
        seqs=list(row["seqs"]),
        budget=budget,
        first_seq=row["lo"],
        tokens=int(row["used"]),
        read=int(row["read"]),
        after_seq=int(row["after"]),
    )


def _obs(rows: list[Row]) -> list[Observation]:
    return [Observation(r["id"], r["level"], r["content"], r["token_count"]) for r in rows]


def _sessions(sessions: frozenset[str] | None) -> tuple[str, list[Any]]:
    if sessions is None:
        return "", []
    return " AND source_sessions <@ %s::text[] AND cardinality(source_sessions) > 0", [
        sorted(sessions)
    ]


class PostgresReads:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def _all(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> list[Row]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def latest_summaries(self, ws: str, session_id: str) -> dict[str, StoredSummary]:
        rows = await self._all(f"SELECT newest.* FROM {_NEWEST}", {"ws": ws, "sid": session_id})
        return {r["summary_type"]: _summary(r) for r in rows}

    async def window_page(
        self,
        ws: str,
        session_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int,
        budget: int,
    ) -> WindowPage:
        sql, params = _window(ws, session_id, after_seq, before_seq, limit, budget)
        rows = await self._all(sql, params)
        return _page(rows[0], budget)

    async def opening(
        self,
        ws: str,
        session_id: str,
        after_seq: int | None,
        limit: int,
        budget: int,
        *,
        summaries: bool,
        card: tuple[str, str] | None,
    ) -> Opening:
        # The window's statement, with the summaries and the card as two more of its values:
        # one round trip and one connection instead of three.
        extra = [_SUMMARIES_JSON if summaries else "'[]'", _CARD if card else "NULL::text[]"]
        sql, params = _window(ws, session_id, after_seq, None, limit, budget, extra)
        if card is not None:
            params |= {"observer": card[0], "observed": card[1]}
        row = (await self._all(sql, params))[0]
        found = [dict(zip(_SUMMARY_COLS, r, strict=True)) for r in orjson.loads(row["extra0"])]
        return Opening(
            summaries={r["summary_type"]: _summary(r) for r in found},
            page=_page(row, budget),
            card=list(row["extra1"]) if row["extra1"] is not None else None,
        )

    async def card(self, ws: str, observer: str, observed: str) -> list[str] | None:
        rows = await self._all(
            "SELECT card FROM peer_cards WHERE workspace = %s AND observer = %s AND observed = %s",
            (ws, observer, observed),
        )
        return list(rows[0]["card"]) if rows else None

    async def stored(self, ws: str, q: StoredQuery) -> StoredReply:
        where, params = _stored_where(q)
        params["ws"] = ws
        if q.ids is None:
            rows = await self._all(
                f"SELECT {_STORED_COLS} FROM observations o WHERE o.workspace = %(ws)s{where}"
                " ORDER BY o.seq DESC LIMIT %(newest)s",
                {**params, "newest": q.newest},
            )
            return StoredReply(observations=_STORED.validate_python(rows))
        # Each id asked, by its place; an alias read as the observation it was merged into.
        rows = await self._all(
            f"SELECT q.id AS asked, {_STORED_COLS} FROM unnest(%(ids)s::text[])"
            " WITH ORDINALITY AS q(id, n)"
            " LEFT JOIN observation_aliases a ON a.workspace = %(ws)s AND a.alias_id = q.id"
            " JOIN observations o ON o.workspace = %(ws)s"
            f" AND o.id = coalesce(a.canonical_id, q.id){where} ORDER BY q.n",
            {**params, "ids": q.ids},
        )
        resolved = {r["asked"]: r["id"] for r in rows}
        return StoredReply(observations=_STORED.validate_python(rows), resolved=resolved)

    async def stored_messages(self, ws: str, q: MessagesQuery) -> MessagesReply:
        sql, params = _messages_sql(q)
        rows = await self._all(sql, {**params, "ws": ws})
        return MessagesReply(messages=_STORED_MESSAGES.validate_python(rows))

    async def newest_observations(
        self, ws: str, observer: str, observed: str, sessions: frozenset[str] | None, limit: int
    ) -> list[Observation]:
        extra, params = _sessions(sessions)
        return _obs(
            await self._all(
                f"SELECT {OBS_COLS} FROM observations WHERE {LIVE}{extra} ORDER BY seq DESC LIMIT %s",
                [ws, observer, observed, *params, limit],
            )
        )

    async def frequent_observations(
        self, ws: str, observer: str, observed: str, sessions: frozenset[str] | None, limit: int
    ) -> list[Observation]:
        extra, params = _sessions(sessions)
        return _obs(
            await self._all(
                f"SELECT {OBS_COLS} FROM observations WHERE {LIVE}{extra}"
                " ORDER BY times_derived DESC, seq DESC LIMIT %s",
                [ws, observer, observed, *params, limit],
            )
        )


def _window(
    ws: str,
    session_id: str,
    after_seq: int | None,
    before_seq: int | None,
    limit: int,
    budget: int,
    extra: Sequence[str] = (),
) -> tuple[str, dict[str, Any]]:
    """The window page's statement (see ``Reads.window_page``), with the ``extra`` values as
    columns ``extra0``, ``extra1``, ...

    The page's sizes come off the session index and are summed newest first; only the messages
    that fit are read whole. Postgres renders them as one JSON array and pydantic-core parses
    it, instead of decoding and validating row by row in Python. ``after`` is a sub-select, so
    no plan is costed for its value: one generic plan then serves every session. Costed per
    value, a long session's plan looked cheap enough that Postgres re-planned it on every call
    (0.4 ms, a third of the read)."""
    bound = _SUMMARIZED if after_seq is None else "SELECT %(after)s::bigint AS after"
    upper = "" if before_seq is None else " AND seq < %(before)s"
    more = "".join(f", {value} AS extra{i}" for i, value in enumerate(extra))
    sql = (
        f"WITH bound AS ({bound}),"
        " page AS (SELECT seq, token_count FROM messages"
        " WHERE workspace = %(ws)s AND session_id = %(sid)s"
        f" AND seq > (SELECT after FROM bound){upper} ORDER BY seq DESC LIMIT %(limit)s),"
        " running AS (SELECT seq, sum(token_count) OVER (ORDER BY seq DESC) AS used FROM page),"
        " taken AS (SELECT min(seq) AS lo, max(seq) AS hi, coalesce(max(used), 0) AS used"
        " FROM running WHERE used <= %(budget)s)"
        " SELECT (SELECT count(*) FROM page) AS read, lo, used,"
        " (SELECT after FROM bound) AS after,"
        " (SELECT coalesce(array_agg(seq ORDER BY seq), '{}') FROM running"
        " WHERE used <= %(budget)s) AS seqs,"
        f" (SELECT coalesce(json_agg(json_build_object({MSG_JSON}) ORDER BY seq), '[]')::text"
        " FROM messages WHERE workspace = %(ws)s AND session_id = %(sid)s"
        f" AND seq BETWEEN lo AND hi) AS window{more} FROM taken"
    )
    params = {
        "ws": ws,
        "sid": session_id,
        "after": after_seq,
        "before": before_seq,
        "limit": limit,
        "budget": budget,
    }
    return sql, params
