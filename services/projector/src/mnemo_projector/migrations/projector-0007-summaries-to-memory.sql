-- depends: projector-0006-webhook-endpoints
-- Summaries are memory formation's output: the memory projection keeps them (and drops a
-- deleted session's, peer's or workspace's, and those an erasure names), so
-- ``mnemo rebuild --memory`` rebuilds them with the rest. The entity projection's deletions
-- leave them alone; each function deletes from every table of the entity projection.
CREATE OR REPLACE FUNCTION mnemo_delete_session(ws text, sid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND session_id = sid;
    DELETE FROM session_peers WHERE workspace = ws AND session_id = sid;
    DELETE FROM scope_sessions WHERE workspace = ws AND session_id = sid;
    DELETE FROM sessions WHERE workspace = ws AND id = sid;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION mnemo_delete_message(ws text, sid text, mid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND id = mid;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION mnemo_delete_peer(ws text, pid text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws AND peer_id = pid;
    DELETE FROM session_peers WHERE workspace = ws AND peer_id = pid;
    DELETE FROM peers WHERE workspace = ws AND id = pid;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION mnemo_delete_workspace(ws text) RETURNS void AS $$
BEGIN
    DELETE FROM messages WHERE workspace = ws;
    DELETE FROM session_peers WHERE workspace = ws;
    DELETE FROM scope_sessions WHERE workspace = ws;
    DELETE FROM scopes WHERE workspace = ws;
    DELETE FROM sessions WHERE workspace = ws;
    DELETE FROM peers WHERE workspace = ws;
    DELETE FROM webhook_endpoints WHERE workspace = ws;
    DELETE FROM workspaces WHERE id = ws;
END $$ LANGUAGE plpgsql;
