-- depends: runtime-0001-projection-positions
-- One row per (event, endpoint): how its delivery went.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    workspace text NOT NULL,
    event_id text NOT NULL,
    endpoint_id text NOT NULL,
    event_type text NOT NULL,
    url text NOT NULL,
    status text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    last_status_code integer,
    latency_ms double precision,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_workspace
    ON webhook_deliveries (workspace, created_at);
