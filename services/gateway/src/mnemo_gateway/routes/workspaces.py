"""/v3/workspaces"""

from __future__ import annotations

from fastapi import APIRouter, Response

from mnemo_gateway import views
from mnemo_gateway.api import ListBody, Page, WorkspaceCreate, WorkspaceOut, WorkspaceUpdate
from mnemo_gateway.deps import PageQ, PathId, Svc, order
from mnemo_gateway.store import WORKSPACES
from mnemo_schema import commands as c

router = APIRouter(prefix="/v3/workspaces", tags=["workspaces"])


@router.post("", response_model=WorkspaceOut)
async def get_or_create_workspace(
    body: WorkspaceCreate, svc: Svc, response: Response
) -> WorkspaceOut:
    """Get a workspace, creating it if it does not exist."""
    reply = await svc.bus.send(
        body.id, c.EnsureWorkspace(metadata=body.metadata, configuration=body.configuration)
    )
    response.status_code = 201 if reply.created else 200
    return views.workspace(await svc.store.workspace(body.id))


@router.post("/list", response_model=Page[WorkspaceOut])
async def list_workspaces(
    svc: Svc, paging: PageQ, body: ListBody | None = None
) -> Page[WorkspaceOut]:
    """All workspaces, filtered and paginated."""
    rows, total, pages = await svc.store.page(
        WORKSPACES,
        "TRUE",
        {},
        body.filters if body else None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    items = [views.workspace(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.put("/{workspace_id}", response_model=WorkspaceOut)
async def update_workspace(workspace_id: PathId, body: WorkspaceUpdate, svc: Svc) -> WorkspaceOut:
    """Replace a workspace's metadata and/or configuration; a workspace that does not exist is
    created with them (200), as the SDK expects of a client made for a new workspace."""
    await svc.bus.send(
        workspace_id,
        c.UpdateWorkspace(metadata=body.metadata, configuration=body.configuration),
    )
    return views.workspace(await svc.store.workspace(workspace_id))


@router.delete("/{workspace_id}", status_code=202)
async def delete_workspace(workspace_id: PathId, svc: Svc) -> dict[str, str]:
    """Erase a workspace and everything in it, in the read models and the log."""
    await svc.bus.send(workspace_id, c.DeleteWorkspace())
    return {"status": "deleted"}
