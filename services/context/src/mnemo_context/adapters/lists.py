"""The statements of the engine's lists: each kind of list, and the rows it points at, in one.

A question's evidence is read in two round trips: the BM25 lists while the question is embedded,
then the vector lists. Each statement ranks its passages and observations and reads the rows of
the observations they point at (those listed, and those citing a listed passage's message) in
the same statement, and Postgres renders the three as JSON: one round trip and three values to
decode instead of a statement and a Python row per candidate (a read's candidates run to a few
hundred, and their rows had been half of the read process's time).

The fragments are plain SQL with named parameters; the adapter (``evidence``) runs them, the
lexical statement prepared, the vector one planned for its values (see ``pg.literal_cursor``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemo_context.ports import Confinement, ObservationAsk, PassageAsk
from mnemo_runtime.vectors.ports import Scope

# BM25 constants of the projector's lexicon (k1, b).
K1, B = 1.2, 0.75
# Postings read per query term, strongest first; and query terms kept, rarest first.
POSTINGS = 400
MAX_TERMS = 32

PASSAGE_COLS = "p.message_id, p.passage, p.peer_id, p.created_at, p.start_char, p.end_char, p.parts"
# An observation's messages: its own and its premises'. The premises are looked up only for an
# observation that has some: the lookup, run for each of a read's 150-300 rows, cost 0.2-0.9 ms
# of its Postgres time when run for the explicit ones too (with no premise to find).
OBSERVATION_COLS = (
    "o.id, o.level, o.content, o.observer, o.observed, o.session_id, o.created_at,"
    " o.observed_at, o.premise_ids, o.times_derived, o.token_count,"
    " CASE WHEN cardinality(o.premise_ids) = 0 THEN o.source_message_ids"
    " ELSE o.source_message_ids || coalesce((SELECT array_agg(DISTINCT s) FROM observations pr,"
    " unnest(pr.source_message_ids) AS s WHERE pr.workspace = o.workspace"
    " AND pr.id = ANY(o.premise_ids)), '{}') END AS sources"
)
# A posting's BM25 weight, in float8 throughout: the constants written plainly would be
# numeric, and numeric arithmetic on each of a read's few thousand postings had cost 0.6 ms of
# its Postgres time at 20,000 messages (the weights come out the same to the last bit).
_WEIGHT = (
    f"w.idf * p.tf * {K1 + 1}::float8 / (p.tf + {K1}::float8"
    f" * ({1 - B}::float8 + {B}::float8 * p.dl / greatest(st.avgdl, 1)))"
)


def _terms(kind: str) -> str:
    """The query's terms with their IDF among the workspace's documents of ``kind`` (``m``
    passages, ``o`` observations), rarest first. Each term's document frequency is looked up on
    its own (a lateral index probe), never by joining the workspace's whole vocabulary: the
    LIMIT keeps the planner from flattening the probe into a hash of that vocabulary, which it
    did for a workspace its statistics had not seen yet (1,000 to 10,000 terms hashed for the
    few of a question)."""
    return f"""
st_{kind} AS (SELECT docs::float8 AS n, length::float8 / greatest(docs, 1) AS avgdl
    FROM search_docs WHERE workspace = %(ws)s AND kind = '{kind}'::"char"),
w_{kind} AS (SELECT q.term, ln(1 + (st.n - f.df + 0.5) / (f.df + 0.5::float8)) AS idf
    FROM q CROSS JOIN st_{kind} st CROSS JOIN LATERAL (SELECT df FROM search_df
        WHERE workspace = %(ws)s AND kind = '{kind}'::"char" AND term = q.term LIMIT 1) AS f
    WHERE f.df > 0 ORDER BY idf DESC LIMIT {MAX_TERMS})"""


def _top(kind: str, owners: str | None, pre: str) -> str:
    """Documents of ``kind`` scored on their postings alone (each term reads at most
    ``POSTINGS``, the strongest first), the best ``pre``; of ``owners`` if given."""
    by_owner = f" CROSS JOIN unnest({owners}::text[]) AS o(owner)" if owners is not None else ""
    owner = " AND t.owner = o.owner" if owners is not None else ""
    return f"""
hits_{kind} AS (SELECT p.doc, p.part, {_WEIGHT} AS s
    FROM w_{kind} w CROSS JOIN st_{kind} st{by_owner}
    CROSS JOIN LATERAL (SELECT doc, part, tf, dl FROM search_terms t WHERE t.workspace = %(ws)s
        AND t.kind = '{kind}'::"char"{owner} AND t.term = w.term
        ORDER BY t.impact DESC LIMIT {POSTINGS}) AS p),
top_{kind} AS (SELECT doc, part, sum(s) AS score FROM hits_{kind} GROUP BY doc, part
    ORDER BY score DESC, doc, part LIMIT {pre})"""


def messages_where(alias: str, confine: Confinement) -> tuple[str, dict[str, Any]]:
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


def observations_where(
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


def _passage_where(ask: PassageAsk, single_sender: bool) -> tuple[str, dict[str, Any]]:
    where, params = messages_where("p", ask.confine)
    if ask.senders is not None and single_sender:
        if len(ask.senders) == 1:
            where += " AND p.peer_id = %(sender)s"
            params["sender"] = ask.senders[0]
        else:
            where += " AND p.peer_id = ANY(%(senders)s::text[])"
            params["senders"] = list(ask.senders)
    if ask.observer is not None:
        where += " AND %(observer)s = ANY(p.observers)"
        params["observer"] = ask.observer
    return where, params


def _cut(listed: str) -> str:
    """``pc``: the passages of ``listed`` (ranked by ``rn``) before the first one naming a
    message beyond the ``distinct``-th: a message's rank is where its first passage stands."""
    return f"""
pn AS (SELECT *, row_number() OVER (ORDER BY score DESC, message_id, passage) AS rn FROM {listed}),
pc AS (SELECT * FROM pn WHERE rn < coalesce((SELECT first FROM (SELECT min(rn) AS first FROM pn
    GROUP BY message_id) AS f ORDER BY first OFFSET %(distinct)s LIMIT 1), %(limit)s + 1))"""


def lexical_passages(ask: PassageAsk) -> tuple[str, dict[str, Any]]:
    """CTEs ending in ``pc``: the passages best by BM25, cut (see ``_cut``)."""
    where, params = _passage_where(ask, single_sender=False)
    owners = "%(senders)s" if ask.senders is not None else None
    if ask.senders is not None:
        params["senders"] = list(ask.senders)
    # Reads more documents than it keeps where its conditions may drop some.
    pre = ask.limit * (8 if ask.confine.messages else 2 if where else 1)
    sql = (
        f"{_terms('m')},{_top('m', owners, '%(pre_m)s')},"
        f"\nlp AS (SELECT {PASSAGE_COLS}, t.score FROM top_m t CROSS JOIN LATERAL"
        " (SELECT * FROM message_passages p1 WHERE p1.workspace = %(ws)s"
        " AND p1.message_id = t.doc AND p1.passage = t.part LIMIT 1) p"
        f" WHERE true{where} ORDER BY t.score DESC, t.doc, t.part LIMIT %(limit)s),"
        f"{_cut('lp')}"
    )
    return sql, {**params, "pre_m": pre, "limit": ask.limit, "distinct": ask.distinct}


def dense_passages(ask: PassageAsk, vector: str, model: str) -> tuple[str, dict[str, Any]]:
    """CTEs ending in ``pc``: the passages nearest ``vector`` (pgvector's text form), cut. The
    statement is planned for its values: a small workspace is read by its B-tree and sorted
    exactly, a large one through the graph with an iterative scan (nearly, not strictly, in
    order; ``_cut`` ranks them), and one sender with many passages through the graph of its
    own (``mnemo_projector.sender_graphs``), which its values select."""
    where, params = _passage_where(ask, single_sender=True)
    sql = (
        f"\ndp AS (SELECT {PASSAGE_COLS}, p.embedding <#> %(v)s::halfvec AS d"
        " FROM message_passages p WHERE p.workspace = %(ws)s AND p.embedding_model = %(model)s"
        f"{where} ORDER BY d LIMIT %(limit)s),"
        "\nlp AS (SELECT message_id, passage, peer_id, created_at, start_char, end_char, parts,"
        " -d AS score FROM dp),"
        f"{_cut('lp')}"
    )
    values = {"v": vector, "model": model, "limit": ask.limit, "distinct": ask.distinct}
    return sql, {**params, **values}


def lexical_observations(ask: ObservationAsk) -> tuple[str, dict[str, Any]]:
    """CTEs ending in ``ol``: the live observations best by BM25, as (id, score)."""
    where, params = observations_where(ask.confine, ask.levels)
    sql = (
        f"{_terms('o')},{_top('o', '%(owners)s', '%(pre_o)s')},"
        "\nol AS (SELECT t.doc AS id, t.score FROM top_o t CROSS JOIN LATERAL"
        " (SELECT * FROM observations o1 WHERE o1.workspace = %(ws)s AND o1.id = t.doc LIMIT 1) o"
        f" WHERE o.deleted_at IS NULL{where} ORDER BY t.score DESC, t.doc LIMIT %(o_limit)s)"
    )
    owners = [f"{s.observer} {s.observed}" for s in ask.scopes]
    return sql, {**params, "owners": owners, "pre_o": ask.limit * 2, "o_limit": ask.limit}


def nearest_observations(searches: Sequence[str]) -> str:
    """A CTE ``ol``: the union of ``searches`` (each a statement of (id, d) rows, d the
    distance), as (id, score)."""
    union = " UNION ALL ".join(f"({s})" for s in searches)
    return f"\nol AS (SELECT id, -d AS score FROM ({union}) AS found)"


_SCOPES = "SELECT * FROM unnest(%(observers)s::text[], %(observeds)s::text[])"


def rows(
    scopes: Sequence[Scope],
    levels: Sequence[str] | None,
    confine: Confinement,
    *,
    cite: bool,
    listed: bool,
) -> tuple[str, dict[str, Any]]:
    """A CTE ``rows``: the live observations inside ``scopes`` (of ``levels``, within
    ``confine``) among those ``listed``
    (``ol``) and (``cite``) those citing a message of ``pc``, each once, with the messages of
    ``pc`` it cites. Each by its key: from the few source rows of the messages listed, not a
    plain join (a planner without statistics yet, on a new, fast-growing table, scanned the
    workspace's observations and probed the sources for each: 0.5 s instead of 1 ms), and the
    LIMIT keeps the lookup from being flattened."""
    where, params = observations_where(confine, levels)
    parts = []
    if cite:
        # Narrowed by the scopes the edges carry: the rows of other representations'
        # observations citing the same messages are never read.
        parts.append(
            "SELECT s.observation_id AS id, s.source_id AS cited FROM observation_sources s"
            " WHERE s.workspace = %(ws)s AND s.source_kind = 'message'"
            " AND s.source_id = ANY(ARRAY(SELECT DISTINCT message_id FROM pc))"
            f" AND (s.observer, s.observed) IN ({_SCOPES})"
        )
    if listed:
        parts.append("SELECT id, NULL::text AS cited FROM ol")
    sql = (
        "\nwanted AS (SELECT id, array_agg(cited) FILTER (WHERE cited IS NOT NULL) AS mids"
        f" FROM ({' UNION ALL '.join(parts)}) AS x GROUP BY id),"
        f"\nrows AS (SELECT {OBSERVATION_COLS}, w.mids AS cited FROM wanted w CROSS JOIN LATERAL"
        " (SELECT * FROM observations o1 WHERE o1.workspace = %(ws)s AND o1.id = w.id"
        f" LIMIT 1) o WHERE o.deleted_at IS NULL AND (o.observer, o.observed) IN ({_SCOPES})"
        f"{where})"
    )
    return sql, {**params, **scope_pairs(scopes)}


def passages_json() -> str:
    return (
        "(SELECT coalesce(json_agg(json_build_array(message_id, passage, peer_id, created_at,"
        " start_char, end_char, parts, score) ORDER BY rn), '[]') FROM pc)::text"
    )


def observations_json() -> str:
    return (
        "(SELECT coalesce(json_agg(json_build_array(id, score) ORDER BY score DESC, id), '[]')"
        " FROM ol)::text"
    )


def rows_json() -> str:
    return (
        "(SELECT coalesce(json_agg(json_build_array(id, level, content, observer, observed,"
        " session_id, created_at, observed_at, premise_ids, times_derived, token_count, sources,"
        " cited) ORDER BY created_at, id), '[]') FROM rows)::text"
    )


def scope_pairs(scopes: Sequence[Scope]) -> dict[str, list[str]]:
    return {"observers": [s.observer for s in scopes], "observeds": [s.observed for s in scopes]}
