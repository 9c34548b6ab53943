-- How far the summarizer has counted each session, for the queue status.
CREATE TABLE summarizer_sessions (
    workspace text NOT NULL,
    session_id text NOT NULL,
    -- Every message of the session up to this position is counted (and any summary due at it
    -- written or parked).
    done_seq bigint NOT NULL DEFAULT 0,
    -- The newest summary published: readers see it once the memory projection has applied it.
    summary_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace, session_id)
);
