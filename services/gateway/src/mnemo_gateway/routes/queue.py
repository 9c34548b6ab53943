"""/v3/workspaces/{w}/queue/status: the work memory formation has done and has yet to do.

Three kinds of work unit, each ending completed or failed (a dead letter, with its reason):

- one posted message for one representation it feeds, for the deriver;
- one posted message for the summarizer, which counts it toward the session's summaries and
  writes any summary due at it;
- one dream asked for (``schedule_dream``, or the dreamer's own schedule).

A message posted with reasoning switched off (the configuration in force when it was posted)
feeds no unit: no memory is formed from it.

Everything is read from projections of the log, made for this status: each representation's
line in the deriver (taken and done positions) and each session's in the summarizer, which the
entity projection keeps from the stages' progress events (``work_lines``, ``work_sessions``); how
far the memory projection has formed each representation (``formed_lines``) and the dreams it
has applied; and the dead letters and the projections' positions. A unit is completed only once readers can see its result: the
observations applied by the memory projection and the message searchable in the passage
projection, the summary applied, the dream's edits applied.

A derived message is formed once the batch it was derived in is applied: the batch's last
observation carries ``formed_through`` (its newest message), which the memory projection keeps
per representation. So a backlog's units complete while the deriver is still ahead of the
projection, not all at once when its newest observation lands. A message whose batch yielded no
observation completes with the next batch that did, or once the line's newest observation is
applied.
"""

from __future__ import annotations

from typing import Annotated, Any

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
    # Units that ended as dead letters (see ``mnemo dlq``): done, but not completed.
    failed_work_units: int = 0


class QueueStatus(BaseModel):
    total_work_units: int
    completed_work_units: int
    in_progress_work_units: int
    pending_work_units: int
    failed_work_units: int = 0
    sessions: dict[str, SessionQueueStatus] | None = None


# The units under the caller's filters, counted per session and state.
_SQL = """
WITH applied AS (
    -- How far each memory projection has applied this workspace's events: its partition's
    -- position, or further where it took the workspace in its turn (projection_ahead).
    SELECT p.name, GREATEST(p.seq, COALESCE(a.seq, 0)) AS seq
    FROM projection_positions p
    LEFT JOIN projection_ahead a ON a.name = p.name AND a.partition = p.partition
         AND a.workspace = %(ws)s
    WHERE p.partition = %(partition)s AND p.name IN ('memory', 'passages')
), pos AS (
    SELECT
      COALESCE((SELECT seq FROM applied WHERE name = 'memory'), 0) AS memory,
      COALESCE((SELECT seq FROM applied WHERE name = 'passages'), 0) AS passages
), failed_derivations AS (
    SELECT DISTINCT d.observer, d.observed, s.value::bigint AS seq
    FROM dead_letters d,
         jsonb_array_elements_text(COALESCE(d.detail -> 'seqs', '[]'::jsonb)) AS s(value)
    WHERE d.stage = 'deriver' AND d.workspace = %(ws)s AND d.status <> 'redriven'
), failed_summaries AS (
    SELECT DISTINCT d.session_id, COALESCE((d.detail ->> 'message_seq')::bigint, d.stream_seq) AS seq
    FROM dead_letters d
    WHERE d.stage = 'summarizer' AND d.workspace = %(ws)s AND d.status <> 'redriven'
), dream_letters AS (
    SELECT stream_seq AS seq, bool_or(status <> 'redriven') AS failed
    FROM dead_letters WHERE stage = 'dreamer' AND workspace = %(ws)s GROUP BY stream_seq
), derived AS (
    SELECT m.session_id,
      CASE
        WHEN f.seq IS NOT NULL THEN 'failed'
        WHEN m.seq <= COALESCE(l.done_seq, 0) AND m.seq <= pos.passages
             AND (COALESCE(l.observation_seq, 0) <= pos.memory
                  OR m.seq <= COALESCE(fl.through_seq, 0)) THEN 'completed'
        WHEN m.seq <= GREATEST(COALESCE(l.taken_seq, 0), COALESCE(l.done_seq, 0))
             THEN 'in_progress'
        ELSE 'pending'
      END AS state
    FROM pos, messages m
    CROSS JOIN LATERAL jsonb_array_elements(m.representations) AS r
    LEFT JOIN work_lines l ON l.workspace = m.workspace AND l.observer = r ->> 'observer'
         AND l.observed = r ->> 'observed'
    LEFT JOIN formed_lines fl ON fl.workspace = m.workspace
         AND fl.observer = r ->> 'observer' AND fl.observed = r ->> 'observed'
    LEFT JOIN failed_derivations f ON f.observer = r ->> 'observer'
         AND f.observed = r ->> 'observed' AND f.seq = m.seq
    WHERE m.workspace = %(ws)s AND m.reasoning
      AND (%(session)s::text IS NULL OR m.session_id = %(session)s)
      AND (%(sessions)s::text[] IS NULL OR m.session_id = ANY(%(sessions)s))
      AND (%(observer)s::text IS NULL OR r ->> 'observer' = %(observer)s)
      AND (%(sender)s::text IS NULL OR r ->> 'observed' = %(sender)s)
), summarized AS (
    SELECT m.session_id,
      CASE
        WHEN f.seq IS NOT NULL THEN 'failed'
        WHEN m.seq <= COALESCE(s.done_seq, 0) AND COALESCE(s.summary_seq, 0) <= pos.memory
             THEN 'completed'
        WHEN m.seq <= COALESCE(s.done_seq, 0) THEN 'in_progress'
        ELSE 'pending'
      END AS state
    FROM pos, messages m
    LEFT JOIN work_sessions s ON s.workspace = m.workspace AND s.session_id = m.session_id
    LEFT JOIN failed_summaries f ON f.session_id = m.session_id AND f.seq = m.seq
    WHERE m.workspace = %(ws)s AND m.reasoning
      AND (%(session)s::text IS NULL OR m.session_id = %(session)s)
      AND (%(sessions)s::text[] IS NULL OR m.session_id = ANY(%(sessions)s))
      AND %(observer)s::text IS NULL AND %(sender)s::text IS NULL
), dreamt AS (
    SELECT d.session_id,
      CASE
        WHEN d.completed_seq IS NOT NULL THEN 'completed'
        WHEN dl.failed THEN 'failed'
        WHEN dl.seq IS NOT NULL THEN 'completed'  -- redriven: a new DreamDue is its own unit
        ELSE 'in_progress'
      END AS state
    FROM dreams d LEFT JOIN dream_letters dl ON dl.seq = d.due_seq
    WHERE d.workspace = %(ws)s
      AND (%(session)s::text IS NULL OR d.session_id = %(session)s)
      AND (%(sessions)s::text[] IS NULL OR d.session_id = ANY(%(sessions)s))
      AND (%(observer)s::text IS NULL OR d.observer = %(observer)s)
      AND (%(sender)s::text IS NULL OR d.observed = %(sender)s)
)
SELECT session_id, state, count(*)::bigint AS n
FROM (SELECT * FROM derived UNION ALL SELECT * FROM summarized UNION ALL SELECT * FROM dreamt) u
GROUP BY 1, 2
"""

_FIELDS = {
    "completed": "completed_work_units",
    "in_progress": "in_progress_work_units",
    "pending": "pending_work_units",
    "failed": "failed_work_units",
}


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = dict.fromkeys(_FIELDS.values(), 0)
    for r in rows:
        out[_FIELDS[r["state"]]] += int(r["n"])
    return {"total_work_units": sum(out.values()), **out}


async def _units(store: ReadStore, params: dict[str, Any]) -> QueueStatus:
    rows = await store.all(_SQL, params)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["session_id"] is not None:
            by_session.setdefault(r["session_id"], []).append(r)
    sessions = {
        sid: SessionQueueStatus(session_id=sid, **_counts(group))
        for sid, group in by_session.items()
    }
    return QueueStatus(**_counts(rows), sessions=sessions)


async def session_units(
    store: ReadStore, workspace: str, partition: int, session_ids: list[str]
) -> dict[str, SessionQueueStatus]:
    """The work units of each of ``session_ids`` that has any (``partition``: the workspace's)."""
    params = {
        "ws": workspace,
        "partition": partition,
        "session": None,
        "sessions": session_ids,
        "observer": None,
        "sender": None,
    }
    return (await _units(store, params)).sessions or {}


async def work_units(
    store: ReadStore,
    workspace_id: str,
    partition: int,
    observer_id: str | None = None,
    sender_id: str | None = None,
    session_id: str | None = None,
) -> QueueStatus:
    """Work units pending, in progress, completed and failed, overall and per session (no
    checks; ``partition``: the workspace's partition of the log)."""
    params: dict[str, Any] = {
        "ws": workspace_id,
        "partition": partition,
        "session": session_id,
        "sessions": None,
        "observer": observer_id,
        "sender": sender_id,
    }
    return await _units(store, params)


@router.get("/queue/status", response_model=QueueStatus)
async def queue_status(
    workspace_id: PathId,
    svc: Svc,
    observer_id: Annotated[EntityId | None, Query()] = None,
    sender_id: Annotated[EntityId | None, Query()] = None,
    session_id: Annotated[EntityId | None, Query()] = None,
) -> QueueStatus:
    """Work units pending, in progress, completed and failed, overall and per session."""
    await svc.store.workspace(workspace_id)
    return await work_units(
        svc.store,
        workspace_id,
        svc.bus.partition(workspace_id),
        observer_id,
        sender_id,
        session_id,
    )
