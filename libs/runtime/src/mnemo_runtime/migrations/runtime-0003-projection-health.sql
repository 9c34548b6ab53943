-- depends: runtime-0001-projection-positions
-- A projection that cannot apply its next batch says so here (readiness reports it).
ALTER TABLE projection_positions ADD COLUMN IF NOT EXISTS failing_since timestamptz;
ALTER TABLE projection_positions ADD COLUMN IF NOT EXISTS last_error text;
