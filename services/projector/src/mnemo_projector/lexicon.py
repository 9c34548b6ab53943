"""The lexical index: BM25 postings of message passages and observations, kept in Postgres.

Why BM25 here and not Postgres's ``ts_rank``: ts_rank weighs every query word alike (it has no
inverse document frequency), so a question's common words count as much as its rare names, and
it must rank every row that contains any of them. BM25's idf is what makes the raw-message
baseline hard to beat, and postings ordered by their term weight let a query read only the
strongest few hundred documents of each term (see the context service's lexical reads).

Words are Postgres's own: ``to_tsvector('english', ...)`` (Snowball stems, stop words out), so
the writer and the reader tokenise alike without shipping a tokenizer. Per term and document
the table keeps the term frequency ``tf`` and the document length ``dl`` (so a query scores
with the collection's current average length) and ``impact``, the BM25 term weight without
idf at the average length of the moment it was written, which orders the postings. Collection
statistics (documents, total length, document frequency per term) are per workspace and kind.

Kinds: ``m`` a message passage (owner: the sender, part: the passage number), ``o`` an
observation (owner: ``"<observer> <observed>"``, part 0). Ids never contain a space.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import orjson

from mnemo_runtime.pg import Connection

Kind = Literal["m", "o"]
# Okapi BM25 constants (Lucene's defaults); the reader scores with the same ones.
K1 = 1.2
B = 0.75

# Documents whose postings exist already are skipped: indexing is idempotent per (doc, part).
_INDEX = f"""
WITH d AS (
    SELECT * FROM json_to_recordset(%s::json)
        AS d(workspace text, kind "char", owner text, doc text, part integer, body text)
    WHERE NOT EXISTS (SELECT 1 FROM search_terms s WHERE s.workspace = d.workspace
                      AND s.kind = d.kind AND s.doc = d.doc AND s.part = d.part)
), t AS (
    SELECT d.workspace, d.kind, d.owner, d.doc, d.part, l.lexeme AS term,
           cardinality(l.positions) AS tf
    FROM d, unnest(to_tsvector('english', d.body)) AS l
), n AS (
    SELECT workspace, kind, doc, part, sum(tf)::integer AS dl FROM t GROUP BY 1, 2, 3, 4
), stats AS (
    INSERT INTO search_docs AS s (workspace, kind, docs, length)
    SELECT workspace, kind, count(*), sum(dl) FROM n GROUP BY 1, 2
    ON CONFLICT (workspace, kind) DO UPDATE
        SET docs = s.docs + EXCLUDED.docs, length = s.length + EXCLUDED.length
    RETURNING workspace, kind, s.length::float8 / greatest(s.docs, 1) AS avgdl
), df AS (
    INSERT INTO search_df AS f (workspace, kind, term, df)
    SELECT workspace, kind, term, count(*) FROM t GROUP BY 1, 2, 3
    ON CONFLICT (workspace, kind, term) DO UPDATE SET df = f.df + EXCLUDED.df
)
INSERT INTO search_terms (workspace, kind, owner, doc, part, term, tf, dl, impact)
SELECT t.workspace, t.kind, t.owner, t.doc, t.part, t.term, t.tf, n.dl,
       t.tf * {K1 + 1} / (t.tf + {K1} * (1 - {B} + {B} * n.dl / greatest(stats.avgdl, 1)))
FROM t JOIN n USING (workspace, kind, doc, part) JOIN stats USING (workspace, kind)
"""

# A term no document holds any more leaves the statistics too: its word is gone from the index.
_UNINDEX = """
WITH gone AS (
    DELETE FROM search_terms WHERE workspace = %(ws)s AND kind = %(kind)s AND doc = ANY(%(docs)s)
    RETURNING workspace, kind, doc, part, term, dl
), counted AS (
    SELECT term, count(*) AS n FROM gone GROUP BY term
), df AS (
    UPDATE search_df f SET df = f.df - g.n FROM counted AS g
    WHERE f.workspace = %(ws)s AND f.kind = %(kind)s AND f.term = g.term AND f.df > g.n
), dropped AS (
    DELETE FROM search_df f USING counted AS g
    WHERE f.workspace = %(ws)s AND f.kind = %(kind)s AND f.term = g.term AND f.df <= g.n
), removed AS (
    SELECT count(*) AS docs, coalesce(sum(dl), 0) AS length
    FROM (SELECT DISTINCT doc, part, dl FROM gone) AS x
)
UPDATE search_docs s SET docs = s.docs - removed.docs, length = s.length - removed.length
FROM removed WHERE s.workspace = %(ws)s AND s.kind = %(kind)s AND removed.docs > 0
"""


@dataclass(frozen=True, slots=True)
class Document:
    """A text to index: one passage of a message, or one observation."""

    workspace: str
    kind: Kind
    owner: str
    doc: str
    part: int
    body: str


def observation_owner(observer: str, observed: str) -> str:
    """The owner key of a representation's observations."""
    return f"{observer} {observed}"


async def index(conn: Connection, documents: Sequence[Document]) -> None:
    """Add the postings of ``documents`` (skipping those already indexed) and their statistics."""
    if not documents:
        return
    unique = {(d.workspace, d.kind, d.doc, d.part): d for d in documents}
    records = [
        {
            "workspace": d.workspace,
            "kind": d.kind,
            "owner": d.owner,
            "doc": d.doc,
            "part": d.part,
            "body": d.body,
        }
        for d in unique.values()
    ]
    await conn.execute(_INDEX, (orjson.dumps(records).decode(),))


async def unindex(conn: Connection, workspace: str, kind: Kind, docs: Sequence[str]) -> None:
    """Remove every posting of ``docs`` (all their parts) and take them out of the statistics."""
    if docs:
        await conn.execute(_UNINDEX, {"ws": workspace, "kind": kind, "docs": list(docs)})


async def drop_workspace(conn: Connection, workspace: str, kind: Kind) -> None:
    """Forget a workspace's documents of ``kind`` and their statistics."""
    for table in ("search_terms", "search_df", "search_docs"):
        await conn.execute(
            f"DELETE FROM {table} WHERE workspace = %s AND kind = %s", (workspace, kind)
        )
