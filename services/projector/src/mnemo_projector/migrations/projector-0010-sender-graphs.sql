-- depends: projector-0009-erasures-by-workspace
-- The vector graphs of their own that large senders' passages get (the passage projection's
-- sender_graphs): one row per graph, by the sender, naming its partial index.
CREATE TABLE IF NOT EXISTS sender_graphs (
    workspace text NOT NULL,
    peer_id text NOT NULL,
    name text NOT NULL,
    passages integer NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace, peer_id)
);
