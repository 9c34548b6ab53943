-- depends: projector-0003-scopes projector-0004-message-reasoning memory-0003-source-sessions projector-0002-lexicon
-- Erasure. The read models retract a deleted message or peer (a session and a workspace had
-- their functions already); the eraser keeps its progress, and the ids of what it erased so
-- that work still in flight when it ran is erased when it lands.
CREATE OR REPLACE FUNCTION mnemo_delete_message(ws text, sid text, mid text) RETURNS void AS $$
DECLARE
    at bigint;
BEGIN
    SELECT seq INTO at FROM messages WHERE workspace = ws AND session_id = sid AND id = mid;
    IF at IS NULL THEN
        RETURN;
    END IF;
    -- Every summary covering the message: each one is merged from the one before it.
    DELETE FROM summaries WHERE workspace = ws AND session_id = sid AND message_seq >= at;
    DELETE FROM messages WHERE workspace = ws AND id = mid;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION mnemo_delete_peer(ws text, pid text) RETURNS void AS $$
BEGIN
    DELETE FROM summaries s USING (
        SELECT session_id, min(seq) AS first FROM messages
        WHERE workspace = ws AND peer_id = pid GROUP BY session_id
    ) AS spoke
    WHERE s.workspace = ws AND s.session_id = spoke.session_id AND s.message_seq >= spoke.first;
    DELETE FROM messages WHERE workspace = ws AND peer_id = pid;
    DELETE FROM session_peers WHERE workspace = ws AND peer_id = pid;
    DELETE FROM peers WHERE workspace = ws AND id = pid;
END $$ LANGUAGE plpgsql;

-- One row per deletion event the eraser has met: done once the log holds nothing of it.
CREATE TABLE erasures (
    seq bigint PRIMARY KEY,
    workspace text NOT NULL,
    kind text NOT NULL,
    target text NOT NULL,
    events_erased integer NOT NULL DEFAULT 0,
    letters_erased integer NOT NULL DEFAULT 0,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
-- What was erased, by id ('m' message, 'o' observation): an event citing one of them that
-- lands after the erasure (work that was in flight) is erased too.
CREATE TABLE erased_ids (
    workspace text NOT NULL,
    kind "char" NOT NULL,
    id text NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (workspace, kind, id)
);
INSERT INTO projection_positions (name, seq) VALUES ('erasure', 0) ON CONFLICT DO NOTHING;
