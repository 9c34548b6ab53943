-- depends: memory-0001-representations projector-0002-lexicon
-- Observations are searched by word through the lexicon now (BM25); the full-text index that
-- served the earlier ranking only slowed the writes down.
DROP INDEX IF EXISTS observations_fts;
