-- Work-unit progress per (session, observer, observed), for the queue status.
CREATE TABLE IF NOT EXISTS deriver_progress (
    workspace text NOT NULL,
    session_id text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    in_progress bigint NOT NULL DEFAULT 0,
    done bigint NOT NULL DEFAULT 0,
    -- Stream position of the newest observation published for this unit: until the memory
    -- projection has applied it, the work is not yet visible to readers.
    last_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace, session_id, observer, observed)
);
