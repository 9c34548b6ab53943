-- depends: projector-0001-read-models
-- Summaries are memory formation's output: the memory projection keeps them (and drops a
-- deleted session's or workspace's), so ``mnemo rebuild --memory`` rebuilds them with the rest.
CREATE OR REPLACE FUNCTION mnemo_delete_session(ws text, sid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND session_id = sid;
    DELETE FROM session_peers WHERE workspace = ws AND session_id = sid;
    DELETE FROM sessions WHERE workspace = ws AND id = sid;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION mnemo_delete_workspace(ws text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws;
    DELETE FROM session_peers WHERE workspace = ws;
    DELETE FROM sessions WHERE workspace = ws;
    DELETE FROM peers WHERE workspace = ws;
    DELETE FROM workspaces WHERE id = ws;
END $$ LANGUAGE plpgsql;
