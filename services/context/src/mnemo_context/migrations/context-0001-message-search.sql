-- depends: projector-0001-read-models
-- Full-text search over messages; observations carry their own (memory tables).
CREATE INDEX IF NOT EXISTS messages_fts ON messages USING gin (to_tsvector('english', content));
