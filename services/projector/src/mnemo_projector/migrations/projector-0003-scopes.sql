-- depends: projector-0001-read-models
-- Scopes: named sets of sessions that recall can be confined to; a deleted session leaves the
-- scopes it was in, a deleted workspace takes its scopes along.
CREATE TABLE scopes (
    workspace text NOT NULL,
    id text NOT NULL,
    uid text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE TABLE scope_sessions (
    workspace text NOT NULL,
    scope_id text NOT NULL,
    session_id text NOT NULL,
    added_at timestamptz NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (workspace, scope_id, session_id)
);
CREATE INDEX scope_sessions_by_session ON scope_sessions (workspace, session_id);

CREATE OR REPLACE FUNCTION mnemo_delete_session(ws text, sid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND session_id = sid;
    DELETE FROM summaries WHERE workspace = ws AND session_id = sid;
    DELETE FROM session_peers WHERE workspace = ws AND session_id = sid;
    DELETE FROM scope_sessions WHERE workspace = ws AND session_id = sid;
    DELETE FROM sessions WHERE workspace = ws AND id = sid;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION mnemo_delete_workspace(ws text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws;
    DELETE FROM summaries WHERE workspace = ws;
    DELETE FROM session_peers WHERE workspace = ws;
    DELETE FROM scope_sessions WHERE workspace = ws;
    DELETE FROM scopes WHERE workspace = ws;
    DELETE FROM sessions WHERE workspace = ws;
    DELETE FROM peers WHERE workspace = ws;
    DELETE FROM workspaces WHERE id = ws;
END $$ LANGUAGE plpgsql;
