-- depends: runtime-0001-projection-positions
-- The entity and message read models and the functions that delete a session or a workspace.
CREATE TABLE IF NOT EXISTS workspaces (
    id text PRIMARY KEY,
    uid text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    configuration jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS peers (
    workspace text NOT NULL,
    id text NOT NULL,
    uid text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    configuration jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE TABLE IF NOT EXISTS sessions (
    workspace text NOT NULL,
    id text NOT NULL,
    uid text NOT NULL,
    is_active boolean NOT NULL DEFAULT true,
    metadata jsonb NOT NULL DEFAULT '{}',
    configuration jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE TABLE IF NOT EXISTS session_peers (
    workspace text NOT NULL,
    session_id text NOT NULL,
    peer_id text NOT NULL,
    observe_me boolean NOT NULL,
    observe_others boolean NOT NULL,
    joined_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, session_id, peer_id)
);
CREATE TABLE IF NOT EXISTS messages (
    workspace text NOT NULL,
    id text NOT NULL,
    session_id text NOT NULL,
    seq bigint NOT NULL,
    peer_id text NOT NULL,
    content text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    token_count integer NOT NULL,
    created_at timestamptz NOT NULL,
    representations jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (workspace, id)
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages (workspace, session_id, seq);
CREATE TABLE IF NOT EXISTS summaries (
    workspace text NOT NULL,
    session_id text NOT NULL,
    summary_type text NOT NULL,
    seq bigint NOT NULL,
    content text NOT NULL,
    message_id text NOT NULL,
    message_seq bigint NOT NULL,
    messages_covered integer NOT NULL,
    token_count integer NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, session_id, summary_type, seq)
);
CREATE INDEX IF NOT EXISTS messages_by_peer ON messages (workspace, peer_id, seq);

CREATE OR REPLACE FUNCTION mnemo_delete_session(ws text, sid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND session_id = sid;
    DELETE FROM summaries WHERE workspace = ws AND session_id = sid;
    DELETE FROM session_peers WHERE workspace = ws AND session_id = sid;
    DELETE FROM sessions WHERE workspace = ws AND id = sid;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION mnemo_delete_workspace(ws text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws;
    DELETE FROM summaries WHERE workspace = ws;
    DELETE FROM session_peers WHERE workspace = ws;
    DELETE FROM sessions WHERE workspace = ws;
    DELETE FROM peers WHERE workspace = ws;
    DELETE FROM workspaces WHERE id = ws;
END $$ LANGUAGE plpgsql;
INSERT INTO projection_positions (name, seq) VALUES ('pg', 0) ON CONFLICT DO NOTHING;
