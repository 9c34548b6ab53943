-- depends: projector-0008-work-lines
-- The eraser asks which workspaces have erasures, and whether progress landing late names an
-- erased peer or session: by workspace, not through every deletion ever carried out.
CREATE INDEX erasures_by_workspace ON erasures (workspace, kind, target);
