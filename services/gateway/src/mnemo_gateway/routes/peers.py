"""/v3/workspaces/{w}/peers"""

from __future__ import annotations

from fastapi import APIRouter, Response

from mnemo_gateway import views
from mnemo_gateway.api import ListBody, Page, PeerCreate, PeerOut, PeerUpdate, SessionOut
from mnemo_gateway.deps import PageQ, PathId, Svc, order
from mnemo_gateway.store import PEERS, SESSIONS
from mnemo_schema import commands as c

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/peers", tags=["peers"])


@router.post("", response_model=PeerOut)
async def get_or_create_peer(
    workspace_id: PathId, body: PeerCreate, svc: Svc, response: Response
) -> PeerOut:
    """Get a peer, creating it if it does not exist."""
    reply = await svc.bus.send(
        workspace_id,
        c.EnsurePeer(peer_id=body.id, metadata=body.metadata, configuration=body.configuration),
    )
    response.status_code = 201 if reply.created else 200
    return views.peer(await svc.store.peer(workspace_id, body.id))


@router.post("/list", response_model=Page[PeerOut])
async def list_peers(
    workspace_id: PathId, svc: Svc, paging: PageQ, body: ListBody | None = None
) -> Page[PeerOut]:
    """Peers of a workspace, filtered and paginated."""
    await svc.store.workspace(workspace_id)
    rows, total, pages = await svc.store.page(
        PEERS,
        "workspace = %(ws)s",
        {"ws": workspace_id},
        body.filters if body else None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    items = [views.peer(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.put("/{peer_id}", response_model=PeerOut)
async def update_peer(workspace_id: PathId, peer_id: PathId, body: PeerUpdate, svc: Svc) -> PeerOut:
    """Replace a peer's metadata and/or configuration."""
    await svc.bus.send(
        workspace_id,
        c.UpdatePeer(peer_id=peer_id, metadata=body.metadata, configuration=body.configuration),
    )
    return views.peer(await svc.store.peer(workspace_id, peer_id))


@router.delete("/{peer_id}", status_code=202)
async def delete_peer(workspace_id: PathId, peer_id: PathId, svc: Svc) -> dict[str, str]:
    """Erase a peer: its messages, its memberships and every representation of or by it."""
    await svc.bus.send(workspace_id, c.DeletePeer(peer_id=peer_id))
    return {"status": "deleted"}


@router.post("/{peer_id}/sessions", response_model=Page[SessionOut])
async def list_peer_sessions(
    workspace_id: PathId, peer_id: PathId, svc: Svc, paging: PageQ, body: ListBody | None = None
) -> Page[SessionOut]:
    """Sessions the peer is a member of."""
    await svc.store.peer(workspace_id, peer_id)
    scope = (
        "workspace = %(ws)s AND id IN (SELECT session_id FROM session_peers"
        " WHERE workspace = %(ws)s AND peer_id = %(peer)s)"
    )
    rows, total, pages = await svc.store.page(
        SESSIONS,
        scope,
        {"ws": workspace_id, "peer": peer_id},
        body.filters if body else None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    items = [views.session(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)
