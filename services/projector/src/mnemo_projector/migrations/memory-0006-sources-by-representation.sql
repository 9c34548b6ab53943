-- depends: memory-0005-formed-lines
-- Each provenance edge carries the representation of the observation it belongs to, so that the
-- observations citing a message are narrowed to the representations a read asks for from the
-- edges alone, before any of their rows is read (a message feeds the representation of each
-- peer observing its sender: in a group, most of the observations citing it are of
-- representations the read does not concern). The reverse index holds the observation's id too,
-- so the lookup reads the index only.
ALTER TABLE observation_sources ADD COLUMN observer text, ADD COLUMN observed text;
-- An edge is written in the transaction that writes its observation, and removed with it.
DELETE FROM observation_sources s WHERE NOT EXISTS (
    SELECT 1 FROM observations o WHERE o.workspace = s.workspace AND o.id = s.observation_id);
UPDATE observation_sources s SET observer = o.observer, observed = o.observed
FROM observations o WHERE o.workspace = s.workspace AND o.id = s.observation_id;
ALTER TABLE observation_sources ALTER COLUMN observer SET NOT NULL,
    ALTER COLUMN observed SET NOT NULL;
DROP INDEX IF EXISTS observation_sources_reverse;
CREATE INDEX observation_sources_reverse
    ON observation_sources (workspace, source_kind, source_id, observer, observed)
    INCLUDE (observation_id);
