-- depends: context-0001-message-search projector-0002-lexicon
-- Messages are searched by word through the lexicon now (BM25 over passages).
DROP INDEX IF EXISTS messages_fts;
