"""/v3/workspaces/{w}/queue/status: derivation work units, from the deriver's real progress."""

from __future__ import annotations

from typing import Annotated, Any

import psycopg
from fastapi import APIRouter, Query
from pydantic import BaseModel

from mnemo_gateway.deps import PathId, Svc
from mnemo_gateway.store import ReadStore
from mnemo_schema.ids import EntityId

router = APIRouter(prefix="/v3/workspaces/{workspace_id}", tags=["queue"])


class SessionQueueStatus(BaseModel):
    session_id: str | None = None
    total_work_units: int
    completed_work_units: int
    in_progress_work_units: int
    pending_work_units: int


class QueueStatus(BaseModel):
    total_work_units: int
    completed_work_units: int
    in_progress_work_units: int
    pending_work_units: int
    sessions: dict[str, SessionQueueStatus] | None = None


# A work unit is one message for one representation it feeds (none for a message posted with
# reasoning switched off). Totals come from the messages' routing; completion from the deriver's
# progress rows; a unit whose observations the memory projection has not applied yet, or whose
# message the passage projection has not made searchable yet, still counts as in progress.
_SQL = """
WITH passages AS (
    SELECT COALESCE((SELECT seq FROM projection_positions WHERE name = 'passages'),
                    9223372036854775807) AS seq
), units AS (
    SELECT m.session_id, r->>'observer' AS observer, r->>'observed' AS observed, count(*) AS total,
           count(*) FILTER (WHERE m.seq > (SELECT seq FROM passages)) AS unsearchable
    FROM messages m, jsonb_array_elements(m.representations) AS r
    WHERE m.workspace = %(ws)s AND m.reasoning
      AND (%(session)s::text IS NULL OR m.session_id = %(session)s)
      AND (%(sessions)s::text[] IS NULL OR m.session_id = ANY(%(sessions)s))
      AND (%(observer)s::text IS NULL OR r->>'observer' = %(observer)s)
      AND (%(sender)s::text IS NULL OR r->>'observed' = %(sender)s)
    GROUP BY 1, 2, 3
), memory AS (
    SELECT COALESCE((SELECT seq FROM projection_positions WHERE name = 'memory'), 0) AS seq
)
SELECT u.session_id,
       sum(u.total)::bigint AS total,
       sum(LEAST(u.total, COALESCE(p.done, 0)))::bigint AS done,
       sum(COALESCE(p.in_progress, 0) + u.unsearchable
           + CASE WHEN COALESCE(p.last_seq, 0) > (SELECT seq FROM memory) THEN 1 ELSE 0 END
       )::bigint AS in_progress
FROM units u
LEFT JOIN deriver_progress p ON p.workspace = %(ws)s AND p.session_id = u.session_id
     AND p.observer = u.observer AND p.observed = u.observed
GROUP BY u.session_id
"""


def _status(total: int, done: int, in_progress: int) -> dict[str, int]:
    in_progress = min(in_progress, total)
    done = min(done, total - in_progress)
    return {
        "total_work_units": total,
        "completed_work_units": done,
        "in_progress_work_units": in_progress,
        "pending_work_units": total - done - in_progress,
    }


async def _sessions(store: ReadStore, params: dict[str, Any]) -> dict[str, SessionQueueStatus]:
    try:
        rows = await store.all(_SQL, params)  # type: ignore[arg-type]
    except psycopg.errors.UndefinedTable:
        rows = []  # the deriver has not started yet: no progress recorded
    return {
        r["session_id"]: SessionQueueStatus(
            session_id=r["session_id"], **_status(r["total"], r["done"], r["in_progress"])
        )
        for r in rows
    }


async def session_units(
    store: ReadStore, workspace: str, session_ids: list[str]
) -> dict[str, SessionQueueStatus]:
    """The work units of each of ``session_ids`` that has any."""
    params = {"ws": workspace, "session": None, "sessions": session_ids, "observer": None,
              "sender": None}  # fmt: skip
    return await _sessions(store, params)


async def work_units(
    store: ReadStore,
    workspace_id: str,
    observer_id: str | None = None,
    sender_id: str | None = None,
    session_id: str | None = None,
) -> QueueStatus:
    """Work units pending, in progress and completed, overall and per session (no checks)."""
    params: dict[str, Any] = {
        "ws": workspace_id, "session": session_id, "sessions": None, "observer": observer_id,
        "sender": sender_id,
    }  # fmt: skip
    sessions = await _sessions(store, params)
    totals = _status(
        sum(s.total_work_units for s in sessions.values()),
        sum(s.completed_work_units for s in sessions.values()),
        sum(s.in_progress_work_units for s in sessions.values()),
    )
    return QueueStatus(**totals, sessions=sessions)


@router.get("/queue/status", response_model=QueueStatus)
async def queue_status(
    workspace_id: PathId,
    svc: Svc,
    observer_id: Annotated[EntityId | None, Query()] = None,
    sender_id: Annotated[EntityId | None, Query()] = None,
    session_id: Annotated[EntityId | None, Query()] = None,
) -> QueueStatus:
    """Work units pending, in progress and completed, overall and per session."""
    await svc.store.workspace(workspace_id)
    return await work_units(svc.store, workspace_id, observer_id, sender_id, session_id)
