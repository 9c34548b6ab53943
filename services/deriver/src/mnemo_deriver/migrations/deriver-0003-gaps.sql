-- depends: deriver-0002-lines
-- Where each workspace's gap begins: messages the deriver acknowledged past the workspace's
-- share of a partition's hold, to be read again from the log (mnemo_deriver.gaps). Whoever
-- takes the partition over reads again from here.
CREATE TABLE deriver_gaps (
    workspace text PRIMARY KEY,
    partition integer NOT NULL,
    position bigint NOT NULL
);
CREATE INDEX deriver_gaps_partition ON deriver_gaps (partition);
