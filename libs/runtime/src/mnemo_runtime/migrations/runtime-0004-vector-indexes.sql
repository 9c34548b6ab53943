-- The pgvector extension (shipped with the embedded Postgres), and one row per vector index:
-- the dimension and model its vectors come from. The tables themselves take the model's
-- dimension, so they are created when a store first opens them (under the same lock).
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS vector_indexes (
    name text PRIMARY KEY,
    dimension integer NOT NULL,
    model text NOT NULL
);
