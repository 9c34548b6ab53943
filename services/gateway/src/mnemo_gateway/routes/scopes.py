"""/v3/workspaces/{w}/scopes: named sets of sessions that recall can be confined to.

A scope holds no memory of its own: recall through it reads the peers' representations confined
to its sessions (their messages, and the observations whose provenance rests on them alone), so
a session added later is visible through the scope as soon as its memory is formed, and a
session removed is gone from it at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from mnemo_gateway import views
from mnemo_gateway.api import Page, SessionOut
from mnemo_gateway.deps import PageQ, PathId, Svc, order
from mnemo_gateway.routes.queue import session_units
from mnemo_gateway.store import SCOPES, SESSIONS
from mnemo_schema import commands as c
from mnemo_schema.commands import MAX_BATCH
from mnemo_schema.ids import EntityId
from mnemo_schema.text import Metadata

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/scopes", tags=["scopes"])


class ScopeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: EntityId
    metadata: Metadata | None = None


class ScopeSessionsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_ids: list[EntityId] = Field(min_length=1, max_length=MAX_BATCH)


class ScopeOut(BaseModel):
    id: str
    metadata: dict[str, Any]
    created_at: datetime


class BackfillJob(BaseModel):
    """Whether the memory of one member session is formed (visible through the scope)."""

    state: Literal["pending", "completed", "failed"]
    updated_at: datetime
    docs_copied: int | None = None


class ScopeStatus(BaseModel):
    backfill_status: dict[str, BackfillJob]


def _view(r: dict[str, Any]) -> ScopeOut:
    return ScopeOut(id=r["id"], metadata=r["metadata"], created_at=r["created_at"])


@router.post("", response_model=ScopeOut)
async def get_or_create_scope(
    workspace_id: PathId, body: ScopeCreate, svc: Svc, response: Response
) -> ScopeOut:
    """Get a scope, creating it if it does not exist."""
    reply = await svc.bus.send(
        workspace_id, c.EnsureScope(scope_id=body.id, metadata=body.metadata)
    )
    response.status_code = 201 if reply.created else 200
    return _view(await svc.store.scope(workspace_id, body.id))


@router.post("/list", response_model=Page[ScopeOut])
async def list_scopes(workspace_id: PathId, svc: Svc, paging: PageQ) -> Page[ScopeOut]:
    """The workspace's scopes, oldest first (newest with ``reverse``)."""
    await svc.store.workspace(workspace_id)
    rows, total, pages = await svc.store.page(
        SCOPES,
        "workspace = %(ws)s",
        {"ws": workspace_id},
        None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    items = [_view(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.get("/{scope_id}", response_model=ScopeOut)
async def get_scope(workspace_id: PathId, scope_id: PathId, svc: Svc) -> ScopeOut:
    """One scope; 404 if it does not exist (never created by this route)."""
    return _view(await svc.store.scope(workspace_id, scope_id))


@router.post("/{scope_id}/sessions", status_code=204)
async def add_scope_sessions(
    workspace_id: PathId, scope_id: PathId, body: ScopeSessionsIn, svc: Svc
) -> None:
    """Add existing sessions to the scope; their memory is visible through it once formed."""
    await svc.bus.send(
        workspace_id, c.AddScopeSessions(scope_id=scope_id, session_ids=body.session_ids)
    )


@router.post("/{scope_id}/sessions/list", response_model=Page[SessionOut])
async def list_scope_sessions(
    workspace_id: PathId, scope_id: PathId, svc: Svc, paging: PageQ
) -> Page[SessionOut]:
    """The scope's sessions, longest-standing members first (newest with ``reverse``)."""
    await svc.store.scope(workspace_id, scope_id)
    scope = (
        "workspace = %(ws)s AND id IN (SELECT session_id FROM scope_sessions"
        " WHERE workspace = %(ws)s AND scope_id = %(scope)s)"
    )
    joined = (
        "(SELECT m.seq FROM scope_sessions m WHERE m.workspace = sessions.workspace"
        " AND m.scope_id = %(scope)s AND m.session_id = sessions.id)"
    )
    rows, total, pages = await svc.store.page(
        SESSIONS,
        scope,
        {"ws": workspace_id, "scope": scope_id},
        None,
        paging.page,
        paging.size,
        order(joined, paging),
    )
    items = [views.session(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.delete("/{scope_id}/sessions/{session_id}", status_code=204)
async def remove_scope_session(
    workspace_id: PathId, scope_id: PathId, session_id: PathId, svc: Svc
) -> None:
    """Take a session out of the scope: recall through the scope no longer sees it."""
    await svc.bus.send(workspace_id, c.RemoveScopeSession(scope_id=scope_id, session_id=session_id))


@router.get("/{scope_id}/status", response_model=ScopeStatus)
async def scope_status(workspace_id: PathId, scope_id: PathId, svc: Svc) -> ScopeStatus:
    """Per member session: ``completed`` once its memory is formed (nothing pending or in
    progress), with how many observations rest on it alone; ``pending`` until then."""
    await svc.store.scope(workspace_id, scope_id)
    members = await svc.store.all(
        "SELECT m.session_id, m.added_at, (SELECT count(*) FROM observations o"
        " WHERE o.workspace = m.workspace AND o.deleted_at IS NULL"
        " AND o.source_sessions = ARRAY[m.session_id]) AS observations"
        " FROM scope_sessions m WHERE m.workspace = %s AND m.scope_id = %s",
        (workspace_id, scope_id),
    )
    units = await session_units(
        svc.store, workspace_id, svc.bus.partition(workspace_id), [r["session_id"] for r in members]
    )
    out: dict[str, BackfillJob] = {}
    for r in members:
        busy = units.get(r["session_id"])
        done = busy is None or (busy.pending_work_units == 0 and busy.in_progress_work_units == 0)
        out[r["session_id"]] = BackfillJob(
            state="completed" if done else "pending",
            updated_at=r["added_at"],
            docs_copied=int(r["observations"]) if done else None,
        )
    return ScopeStatus(backfill_status=out)
