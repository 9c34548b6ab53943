-- depends: memory-0003-source-sessions
-- Every dream asked for (a DreamDue in the log) and whether it has finished: the queue status
-- counts them. Projected by the memory projection, which applies a dream's edits before the
-- DreamCompleted that follows them in the log.
CREATE TABLE dreams (
    workspace text NOT NULL,
    due_event_id text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    session_id text,
    reason text NOT NULL,
    due_seq bigint NOT NULL,
    completed_seq bigint,
    PRIMARY KEY (workspace, due_event_id)
);
CREATE INDEX dreams_by_representation ON dreams (workspace, observer, observed);
