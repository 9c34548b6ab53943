-- When each representation dreams next.
CREATE TABLE IF NOT EXISTS dream_schedule (
    workspace text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    explicit_count integer NOT NULL DEFAULT 0,
    explicit_at_last_dream integer NOT NULL DEFAULT 0,
    last_dream_at timestamptz,
    last_activity_at timestamptz,
    due_at timestamptz,
    due_event_id text,
    -- The stream position of the last explicit observation counted: counting is idempotent.
    applied_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace, observer, observed)
);
CREATE INDEX IF NOT EXISTS dream_schedule_due ON dream_schedule (due_at)
    WHERE due_at IS NOT NULL AND due_event_id IS NULL;
