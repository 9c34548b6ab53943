-- depends: runtime-0001-projection-positions
-- Work a stage could not complete, with the reason, until an operator redrives or discards it.
CREATE TABLE IF NOT EXISTS dead_letters (
    id bigserial PRIMARY KEY,
    stage text NOT NULL,
    -- Unique within the stage: the stream position of an event, or what identifies a batch.
    key text NOT NULL,
    reason text NOT NULL,
    status text NOT NULL DEFAULT 'open'
        CHECK (status IN ('open', 'redrive', 'redriven', 'discarded')),
    stream_seq bigint,
    subject text,
    event_id text,
    event_type text,
    workspace text,
    session_id text,
    observer text,
    observed text,
    attempts integer NOT NULL DEFAULT 1,
    -- The event as delivered (at most 1 MiB), and the corrected one a redrive applies instead.
    data bytea,
    fixed_data bytea,
    detail jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    UNIQUE (stage, key)
);
CREATE INDEX IF NOT EXISTS dead_letters_open ON dead_letters (workspace, session_id)
    WHERE status IN ('open', 'redrive');
