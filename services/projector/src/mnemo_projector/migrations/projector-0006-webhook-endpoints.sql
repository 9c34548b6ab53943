-- depends: projector-0005-erasure
-- The webhook endpoints each workspace registered; deleting the workspace removes them.
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    workspace text NOT NULL,
    id text NOT NULL,
    url text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_endpoints_by_url ON webhook_endpoints (workspace, url);

CREATE OR REPLACE FUNCTION mnemo_delete_workspace(ws text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws;
    DELETE FROM summaries WHERE workspace = ws;
    DELETE FROM session_peers WHERE workspace = ws;
    DELETE FROM scope_sessions WHERE workspace = ws;
    DELETE FROM scopes WHERE workspace = ws;
    DELETE FROM sessions WHERE workspace = ws;
    DELETE FROM peers WHERE workspace = ws;
    DELETE FROM webhook_endpoints WHERE workspace = ws;
    DELETE FROM workspaces WHERE id = ws;
END $$ LANGUAGE plpgsql;
