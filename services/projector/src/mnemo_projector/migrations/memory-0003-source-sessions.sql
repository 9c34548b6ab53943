-- depends: memory-0002-words-through-the-lexicon
-- The sessions each observation rests on, through its provenance: an explicit one its own
-- session (or '' when it came from no session, as a conclusion stated through the API may), a
-- derived one the union of its premises'. A read confined to a set of sessions sees exactly the
-- observations whose sessions all lie in the set.
ALTER TABLE observations ADD COLUMN source_sessions text[] NOT NULL DEFAULT '{}';
WITH RECURSIVE walk (workspace, id, session) AS (
    SELECT workspace, id, coalesce(session_id, '') FROM observations WHERE level = 'explicit'
    UNION
    SELECT s.workspace, s.observation_id, w.session FROM observation_sources s
    JOIN walk w ON s.workspace = w.workspace AND s.source_kind = 'observation'
        AND s.source_id = w.id
)
UPDATE observations o SET source_sessions = x.sessions
FROM (SELECT workspace, id, array_agg(DISTINCT session ORDER BY session) AS sessions
      FROM walk GROUP BY 1, 2) AS x
WHERE o.workspace = x.workspace AND o.id = x.id;
