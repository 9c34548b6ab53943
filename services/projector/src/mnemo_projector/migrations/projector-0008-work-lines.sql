-- depends: projector-0007-summaries-to-memory
-- How far the stages have come, for the queue status, projected from their progress events
-- (``DerivationProgressed``, ``SummarizationProgressed``): what the deriver has taken and done in
-- each representation's line, and what the summarizer has counted of each session. Each event
-- says "at least this far"; a row keeps the greatest of each position.
CREATE TABLE work_lines (
    workspace text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    -- The newest message position being derived, and the newest done (derived or parked as a
    -- dead letter) with every earlier message of the representation.
    taken_seq bigint NOT NULL DEFAULT 0,
    done_seq bigint NOT NULL DEFAULT 0,
    -- The stream position of the newest observation published for the representation.
    observation_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace, observer, observed)
);
CREATE TABLE work_sessions (
    workspace text NOT NULL,
    session_id text NOT NULL,
    -- Every message of the session up to this position is counted by the summarizer.
    done_seq bigint NOT NULL DEFAULT 0,
    -- The newest summary published.
    summary_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace, session_id)
);

-- Each deletion takes the progress of what it deletes along.
CREATE OR REPLACE FUNCTION mnemo_delete_session(ws text, sid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND session_id = sid;
    DELETE FROM session_peers WHERE workspace = ws AND session_id = sid;
    DELETE FROM scope_sessions WHERE workspace = ws AND session_id = sid;
    DELETE FROM work_sessions WHERE workspace = ws AND session_id = sid;
    DELETE FROM sessions WHERE workspace = ws AND id = sid;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION mnemo_delete_peer(ws text, pid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND peer_id = pid;
    DELETE FROM session_peers WHERE workspace = ws AND peer_id = pid;
    DELETE FROM work_lines WHERE workspace = ws AND pid IN (observer, observed);
    DELETE FROM peers WHERE workspace = ws AND id = pid;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION mnemo_delete_workspace(ws text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws;
    DELETE FROM session_peers WHERE workspace = ws;
    DELETE FROM scope_sessions WHERE workspace = ws;
    DELETE FROM scopes WHERE workspace = ws;
    DELETE FROM work_lines WHERE workspace = ws;
    DELETE FROM work_sessions WHERE workspace = ws;
    DELETE FROM sessions WHERE workspace = ws;
    DELETE FROM peers WHERE workspace = ws;
    DELETE FROM webhook_endpoints WHERE workspace = ws;
    DELETE FROM workspaces WHERE id = ws;
END $$ LANGUAGE plpgsql;
