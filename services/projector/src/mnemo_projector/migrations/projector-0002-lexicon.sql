-- depends: runtime-0001-projection-positions
-- BM25 postings of message passages and observations, with their document statistics.
CREATE TABLE IF NOT EXISTS search_terms (
    workspace text NOT NULL,
    kind "char" NOT NULL,
    owner text NOT NULL,
    doc text NOT NULL,
    part integer NOT NULL,
    term text NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL,
    impact real NOT NULL,
    PRIMARY KEY (workspace, kind, doc, part, term)
);
CREATE INDEX IF NOT EXISTS search_terms_by_owner ON search_terms
    (workspace, kind, owner, term, impact DESC) INCLUDE (doc, part, tf, dl);
CREATE INDEX IF NOT EXISTS search_terms_by_term ON search_terms
    (workspace, kind, term, impact DESC) INCLUDE (owner, doc, part, tf, dl);
CREATE TABLE IF NOT EXISTS search_df (
    workspace text NOT NULL,
    kind "char" NOT NULL,
    term text NOT NULL,
    df integer NOT NULL,
    PRIMARY KEY (workspace, kind, term)
);
CREATE TABLE IF NOT EXISTS search_docs (
    workspace text NOT NULL,
    kind "char" NOT NULL,
    docs bigint NOT NULL,
    length bigint NOT NULL,
    PRIMARY KEY (workspace, kind)
);
