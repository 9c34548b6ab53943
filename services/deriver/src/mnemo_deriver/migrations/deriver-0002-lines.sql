-- depends: deriver-0001-progress
-- Progress per representation line (taken and done positions) replaces the per-session
-- counters, which a crash or a redelivery could leave counting work that would never finish.
DROP TABLE IF EXISTS deriver_progress;
CREATE TABLE deriver_lines (
    workspace text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    -- The newest message position being derived, and the newest done (derived or parked as a
    -- dead letter) with every earlier message of the representation.
    taken_seq bigint NOT NULL DEFAULT 0,
    done_seq bigint NOT NULL DEFAULT 0,
    -- The stream position of the newest observation published for the representation: until
    -- the memory projection has applied it, the work is not yet visible to readers.
    observation_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace, observer, observed)
);
