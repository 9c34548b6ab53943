"""Read-only walk of Mnemo's provenance DAG in Postgres: observation -> source messages' turn ids."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

_WALK = """
WITH RECURSIVE walk(root, id, depth) AS (
    SELECT r, r, 0 FROM unnest(%(ids)s::text[]) AS r
    UNION
    SELECT w.root, s.source_id, w.depth + 1
    FROM walk w JOIN observation_sources s
      ON s.workspace = %(ws)s AND s.observation_id = w.id AND s.source_kind = 'observation'
    WHERE w.depth < 6
)
SELECT w.root, m.metadata->>'turn_id'
FROM walk w
JOIN observation_sources s
  ON s.workspace = %(ws)s AND s.observation_id = w.id AND s.source_kind = 'message'
JOIN messages m ON m.workspace = %(ws)s AND m.id = s.source_id
ORDER BY w.root, m.created_at
"""

_CONTENTS = """
SELECT id, content FROM observations
WHERE workspace = %(ws)s AND observed = %(observed)s AND deleted_at IS NULL
"""


class Provenance:
    """Maps observations to the dataset turn ids of the messages they came from."""

    def __init__(self, database_url: str) -> None:
        self._conn = psycopg.connect(database_url, autocommit=True)
        self._conn.read_only = True

    def turns_of(self, workspace: str, observation_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each observation id, its source turn ids (derived ones through their premises)."""
        out: dict[str, list[str]] = {i: [] for i in observation_ids}
        if not observation_ids:
            return out
        rows = self._conn.execute(_WALK, {"ids": list(observation_ids), "ws": workspace})
        for root, turn in rows.fetchall():
            if turn is not None and turn not in out[root]:
                out[root].append(turn)
        return out

    def observations(self, workspace: str, observed: str) -> dict[str, str]:
        """Content -> id of every live observation about ``observed`` in ``workspace``."""
        rows = self._conn.execute(_CONTENTS, {"ws": workspace, "observed": observed}).fetchall()
        return {str(content): str(ident) for ident, content in rows}

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
