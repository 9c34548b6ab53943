"""What Postgres holds about a session: configuration, newest summaries, messages."""

from __future__ import annotations

from typing import Any

from mnemo_runtime import positions
from mnemo_runtime.pg import Pool
from mnemo_runtime.positions import wait_applied
from mnemo_schema.config import (
    SummaryConfiguration,
    WorkspaceConfiguration,
    effective,
    instructions,
)
from mnemo_schema.subjects import partition_of
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import KINDS, Stored, Turn
from mnemo_summarizer.ports import SessionRecord

_CONFIG = """
SELECT w.configuration AS workspace, s.configuration AS session
FROM (SELECT 1) one
LEFT JOIN workspaces w ON w.id = %(ws)s
LEFT JOIN sessions s ON s.workspace = %(ws)s AND s.id = %(sid)s
"""

_LATEST = """
SELECT DISTINCT ON (summary_type) summary_type, content, message_seq, messages_covered
FROM summaries WHERE workspace = %(ws)s AND session_id = %(sid)s
ORDER BY summary_type, message_seq DESC, seq DESC
"""

_MESSAGES = """
SELECT seq, id, peer_id, content, created_at FROM messages
WHERE workspace = %(ws)s AND session_id = %(sid)s AND seq > %(after)s AND seq < %(before)s
ORDER BY seq
"""


def _config(raw: Any) -> WorkspaceConfiguration | None:
    if not isinstance(raw, dict):
        return None
    try:
        return WorkspaceConfiguration.model_validate(raw)
    except ValueError:
        return None


def _summary(cfg: WorkspaceConfiguration | None) -> SummaryConfiguration | None:
    return None if cfg is None else cfg.summary


class PgSessionHistory:
    def __init__(self, pool: Pool, partitions: int, wait_s: float = 10.0) -> None:
        self._pool = pool
        self._partitions = partitions
        self._wait_s = wait_s

    async def caught_up(self, workspace: str, seq: int) -> None:
        partition = partition_of(workspace, self._partitions)
        if not await wait_applied(self._pool, positions.ENTITIES, partition, seq, self._wait_s):
            raise TimeoutError(f"the entity projection has not applied position {seq} yet")

    async def load(self, workspace: str, session_id: str, before_seq: int) -> SessionRecord:
        args: dict[str, object] = {"ws": workspace, "sid": session_id, "before": before_seq}
        async with self._pool.connection() as conn:
            # The pool hands out rows as dicts.
            row: dict[str, Any] | None = await (await conn.execute(_CONFIG, args)).fetchone()
            levels = (_config(row["workspace"]), _config(row["session"])) if row else ()
            configs = tuple(_summary(c) for c in levels)
            told = instructions(effective(*levels), "summarizer")
            latest: dict[SummaryType, Stored] = {}
            stored: list[dict[str, Any]] = await (await conn.execute(_LATEST, args)).fetchall()
            for r in stored:
                if r["summary_type"] in KINDS:
                    latest[r["summary_type"]] = Stored(
                        r["content"], int(r["message_seq"]), int(r["messages_covered"])
                    )
            # Both tracks are rebuilt from the messages after the older of the two summaries.
            args["after"] = min((latest[k].message_seq if k in latest else 0) for k in KINDS)
            rows: list[dict[str, Any]] = await (await conn.execute(_MESSAGES, args)).fetchall()
        messages = tuple(
            Turn(int(r["seq"]), r["id"], r["peer_id"], r["content"], r["created_at"]) for r in rows
        )
        return SessionRecord(configs=configs, latest=latest, messages=messages, instructions=told)
