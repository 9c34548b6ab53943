"""The engine's reads in Postgres: BM25 postings, passage vectors, observation rows, messages.

The lexicon, the passages and the observations are the memory projections' tables (see the
projector's ``lexicon`` and ``passages``). BM25 is computed here with the constants it was
indexed with; each query term reads at most ``lists.POSTINGS`` postings, the strongest first, so
a question's common words cost a bounded read however many documents hold them. The lists and
the rows they point at are read a kind at a time, one statement each (``lists``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
import psycopg
from psycopg.rows import AsyncRowFactory, dict_row, tuple_row
from pydantic import TypeAdapter

from mnemo_context.adapters import lists
from mnemo_context.ports import (
    Confinement,
    Lists,
    ListsAsk,
    ObservationRow,
    PassageHit,
)
from mnemo_runtime.pg import Pool, literal_cursor
from mnemo_runtime.vectors.pgvector import PgVectorIndex, vector_literal
from mnemo_runtime.vectors.ports import Scope, SearchFilters, VectorLike
from mnemo_schema.context_queries import ContextMessage

# How many earlier turns of its session a message's preceding turn is looked for among.
LOOKBACK = 8
_MSG_JSON = (
    "json_build_object('id', {t}.id, 'content', {t}.content, 'peer_id', {t}.peer_id,"
    " 'session_id', {t}.session_id, 'workspace_id', {t}.workspace, 'metadata', {t}.metadata,"
    " 'created_at', {t}.created_at, 'token_count', {t}.token_count)"
)
_MESSAGE = TypeAdapter(ContextMessage)


def _passage_json(r: list[Any]) -> PassageHit:
    """A passage from ``lists.passages_json``'s array."""
    return PassageHit(
        message_id=r[0],
        passage=r[1],
        peer_id=r[2],
        created_at=datetime.fromisoformat(r[3]),
        start=r[4],
        end=r[5],
        parts=r[6],
        score=float(r[7]),
    )


def _observation_json(r: list[Any]) -> ObservationRow:
    """An observation from ``lists.rows_json``'s array."""
    observed_at = r[7]
    return ObservationRow(
        id=r[0],
        level=r[1],
        content=r[2],
        observer=r[3],
        observed=r[4],
        session_id=r[5],
        created_at=datetime.fromisoformat(r[6]),
        observed_at=datetime.fromisoformat(observed_at) if observed_at else None,
        premise_ids=tuple(r[8] or ()),
        source_message_ids=tuple(dict.fromkeys(r[11] or ())),
        times_derived=r[9],
        token_count=r[10],
    )


class PostgresEvidence:
    """EvidenceReads over the projections' tables; a table not made yet reads as empty.

    With ``vectors`` (the observation vectors' index, in this pool's database), ``dense``
    searches the observations too, in its own statement."""

    def __init__(self, pool: Pool, vectors: PgVectorIndex | None = None) -> None:
        self._pool = pool
        self._vectors = vectors

    async def _all(
        self, sql: str, params: dict[str, Any], literal: bool = False, values: bool = False
    ) -> list[Any]:
        """Rows of ``sql`` (dicts, or tuples with ``values``): prepared, or (``literal``) with
        its values in its text, planned for them (``pg.literal_cursor``)."""
        try:
            async with self._pool.connection() as conn:
                rows: AsyncRowFactory[Any] = tuple_row if values else dict_row
                cur = literal_cursor(conn, rows) if literal else conn.cursor(row_factory=rows)
                await cur.execute(sql, params)
                return await cur.fetchall()
        except psycopg.errors.UndefinedTable:
            return []  # the projection that writes it has not started yet

    async def peer_names(self, ws: str) -> dict[str, list[str]]:
        rows = await self._all(
            "SELECT id, metadata->>'name' AS name FROM peers WHERE workspace = %(ws)s", {"ws": ws}
        )
        return {r["id"]: [r["name"]] if r["name"] else [] for r in rows}

    @property
    def searches_observations(self) -> bool:
        return self._vectors is not None

    async def lexical(self, ws: str, query: str, ask: ListsAsk) -> Lists:
        ctes = ["q AS (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %(q)s)))"]
        params: dict[str, Any] = {"ws": ws, "q": query}
        if ask.passages is not None:
            sql, values = lists.lexical_passages(ask.passages)
            ctes.append(sql)
            params |= values
        listed = ask.observations is not None and ask.observations.listed
        if ask.observations is not None and listed:
            sql, values = lists.lexical_observations(ask.observations)
            ctes.append(sql)
            params |= values
        return await self._lists(ctes, params, ask, listed, False)

    async def dense(self, ws: str, vector: VectorLike, model: str, ask: ListsAsk) -> Lists:
        ctes: list[str] = []
        literal = vector_literal(vector)
        params: dict[str, Any] = {"ws": ws, "v": literal}
        if ask.passages is not None:
            sql, values = lists.dense_passages(ask.passages, literal, model)
            ctes.append(sql)
            params |= values
        wanted = ask.observations
        listed = wanted is not None and wanted.listed and bool(wanted.scopes)
        if wanted is not None and listed and self._vectors is not None:
            searches = []
            filters = SearchFilters.of(levels=wanted.levels or None)
            for i, scope in enumerate(wanted.scopes):
                sql, values = self._vectors.nearest(
                    scope, limit=wanted.limit, filters=filters, key=f"s{i}"
                )
                searches.append(sql)
                params |= values
            ctes.append(lists.nearest_observations(searches))
        elif listed:
            raise ValueError("no observation vectors here to list: ask the vector index")
        # Planned for these values (never a generic plan): see ``lists.dense_passages``.
        return await self._lists(ctes, params, ask, listed, True)

    async def _lists(
        self, ctes: list[str], params: dict[str, Any], ask: ListsAsk, listed: bool, literal: bool
    ) -> Lists:
        """The lists of ``ctes`` (``pc`` passages, ``ol`` observations if ``listed``) and the
        rows they point at, in one statement."""
        passages = ask.passages is not None
        if not passages and not listed:
            return Lists()
        out = [lists.passages_json() if passages else "'[]'"]
        out.append(lists.observations_json() if listed else "'[]'")
        scoped = ask.observations
        cite = scoped is not None and scoped.cite and passages
        if scoped is not None and (listed or cite):
            sql, values = lists.rows(
                scoped.scopes, scoped.levels, scoped.confine, cite=cite, listed=listed
            )
            ctes.append(sql)
            params |= values
            out.append(lists.rows_json())
        else:
            out.append("'[]'")
        got = await self._all(
            f"WITH {','.join(ctes)} SELECT {', '.join(out)}",
            params,
            literal=literal,
            values=True,
        )
        if not got:
            return Lists()  # the projections have not made their tables yet
        found_p, found_o, found_rows = (orjson.loads(v) for v in got[0])
        out_rows = [_observation_json(r) for r in found_rows]
        cites = [(mid, r[0]) for r in found_rows for mid in r[12] or ()]
        return Lists(
            passages=[_passage_json(r) for r in found_p],
            observations=[(i, float(score)) for i, score in found_o],
            rows=out_rows,
            cites=cites,
        )

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
        sql, params = lists.rows(scopes, levels, confine, cite=True, listed=True)
        got = await self._all(
            "WITH pc AS (SELECT unnest(%(mids)s::text[]) AS message_id),"
            f" ol AS (SELECT unnest(%(ids)s::text[]) AS id), {sql} SELECT {lists.rows_json()}",
            {"ws": ws, "ids": list(ids), "mids": list(message_ids), **params},
            values=True,
        )
        found = orjson.loads(got[0][0]) if got else []
        cites = [(mid, r[0]) for r in found for mid in r[12] or ()]
        return [_observation_json(r) for r in found], cites

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
        where, params = lists.messages_where("m", confine)
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
