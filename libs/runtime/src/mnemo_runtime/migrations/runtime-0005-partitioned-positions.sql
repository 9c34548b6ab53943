-- depends: runtime-0003-projection-health
-- Each projection applies each partition of the log on its own (see mnemo_schema.subjects): one
-- position per partition. A row of an earlier version counts as partition 0's.
ALTER TABLE projection_positions ADD COLUMN partition integer NOT NULL DEFAULT 0;
ALTER TABLE projection_positions DROP CONSTRAINT projection_positions_pkey;
ALTER TABLE projection_positions ADD PRIMARY KEY (name, partition);
