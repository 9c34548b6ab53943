-- depends: runtime-0005-partitioned-positions
-- A projection that applies a partition's workspaces in turns (each in its own log order)
-- records, for a workspace applied past the partition's position, how far: every event of that
-- workspace up to ``seq`` is applied. The partition's position stays the point up to which
-- every event is.
CREATE TABLE projection_ahead (
    name text NOT NULL,
    partition integer NOT NULL,
    workspace text NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (name, partition, workspace)
);
