-- The applied stream position of every projection, each advanced with its effects.
CREATE TABLE IF NOT EXISTS projection_positions (
    name text PRIMARY KEY,
    seq bigint NOT NULL
);
