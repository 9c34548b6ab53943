"""/v3/workspaces/{w}/sessions and their members."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response

from mnemo_gateway import views
from mnemo_gateway.api import (
    ListBody,
    Page,
    PeerOut,
    SessionCreate,
    SessionOut,
    SessionPeerConfigOut,
    SessionUpdate,
)
from mnemo_gateway.deps import PageQ, PathId, Svc, order
from mnemo_gateway.store import PEERS, SESSIONS
from mnemo_schema import commands as c
from mnemo_schema.config import SessionPeerConfig
from mnemo_schema.ids import EntityId

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/sessions", tags=["sessions"])

PeerMap = Annotated[dict[EntityId, SessionPeerConfig], Body()]


@router.post("", response_model=SessionOut)
async def get_or_create_session(
    workspace_id: PathId, body: SessionCreate, svc: Svc, response: Response
) -> SessionOut:
    """Get a session, creating it (and its initial members) if it does not exist."""
    reply = await svc.bus.send(
        workspace_id,
        c.EnsureSession(
            session_id=body.id,
            metadata=body.metadata,
            configuration=body.configuration,
            peers=body.peers,
            scopes=body.scopes,
        ),
    )
    response.status_code = 201 if reply.created else 200
    return views.session(await svc.store.session(workspace_id, body.id))


@router.post("/list", response_model=Page[SessionOut])
async def list_sessions(
    workspace_id: PathId, svc: Svc, paging: PageQ, body: ListBody | None = None
) -> Page[SessionOut]:
    """Sessions of a workspace, filtered and paginated."""
    await svc.store.workspace(workspace_id)
    rows, total, pages = await svc.store.page(
        SESSIONS,
        "workspace = %(ws)s",
        {"ws": workspace_id},
        body.filters if body else None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    items = [views.session(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.put("/{session_id}", response_model=SessionOut)
async def update_session(
    workspace_id: PathId, session_id: PathId, body: SessionUpdate, svc: Svc
) -> SessionOut:
    """Replace a session's metadata and/or configuration."""
    await svc.bus.send(
        workspace_id,
        c.UpdateSession(
            session_id=session_id, metadata=body.metadata, configuration=body.configuration
        ),
    )
    return views.session(await svc.store.session(workspace_id, session_id))


@router.delete("/{session_id}", status_code=202)
async def delete_session(workspace_id: PathId, session_id: PathId, svc: Svc) -> dict[str, str]:
    """Erase a session: its members, its messages and what was derived from them."""
    await svc.bus.send(workspace_id, c.DeleteSession(session_id=session_id))
    return {"status": "deleted"}


@router.post("/{session_id}/clone", response_model=SessionOut)
async def clone_session(
    workspace_id: PathId,
    session_id: PathId,
    svc: Svc,
    message_id: Annotated[EntityId | None, Query()] = None,
) -> SessionOut:
    """Copy a session into a new one: all its messages, or those up to and including
    ``message_id``; the copies feed no memory (the originals did)."""
    reply = await svc.bus.send(
        workspace_id, c.CloneSession(session_id=session_id, message_id=message_id)
    )
    assert reply.session_id is not None
    return views.session(await svc.store.session(workspace_id, reply.session_id))


@router.post("/{session_id}/peers", response_model=SessionOut)
async def add_session_peers(
    workspace_id: PathId, session_id: PathId, peers: PeerMap, svc: Svc
) -> SessionOut:
    """Add members (peer id -> configuration)."""
    await svc.bus.send(workspace_id, c.AddSessionPeers(session_id=session_id, peers=peers))
    return views.session(await svc.store.session(workspace_id, session_id))


@router.put("/{session_id}/peers", response_model=SessionOut)
async def set_session_peers(
    workspace_id: PathId, session_id: PathId, peers: PeerMap, svc: Svc
) -> SessionOut:
    """Make the given peers the whole membership."""
    await svc.bus.send(
        workspace_id, c.AddSessionPeers(session_id=session_id, peers=peers, replace=True)
    )
    return views.session(await svc.store.session(workspace_id, session_id))


@router.delete("/{session_id}/peers", response_model=SessionOut)
async def remove_session_peers(
    workspace_id: PathId, session_id: PathId, peer_ids: Annotated[list[EntityId], Body()], svc: Svc
) -> SessionOut:
    """Remove members."""
    await svc.bus.send(workspace_id, c.RemoveSessionPeers(session_id=session_id, peer_ids=peer_ids))
    return views.session(await svc.store.session(workspace_id, session_id))


@router.get("/{session_id}/peers", response_model=Page[PeerOut])
async def list_session_peers(
    workspace_id: PathId, session_id: PathId, svc: Svc, paging: PageQ
) -> Page[PeerOut]:
    """Members of a session."""
    await svc.store.session(workspace_id, session_id)
    scope = (
        "workspace = %(ws)s AND id IN (SELECT peer_id FROM session_peers"
        " WHERE workspace = %(ws)s AND session_id = %(sid)s)"
    )
    rows, total, pages = await svc.store.page(
        PEERS,
        scope,
        {"ws": workspace_id, "sid": session_id},
        None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    items = [views.peer(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.get("/{session_id}/peers/{peer_id}/config", response_model=SessionPeerConfigOut)
async def get_session_peer_config(
    workspace_id: PathId, session_id: PathId, peer_id: PathId, svc: Svc
) -> SessionPeerConfigOut:
    """A member's observe_me / observe_others switches."""
    row = await svc.store.member_config(workspace_id, session_id, peer_id)
    return SessionPeerConfigOut(observe_me=row["observe_me"], observe_others=row["observe_others"])


@router.put("/{session_id}/peers/{peer_id}/config", response_model=SessionPeerConfigOut)
async def set_session_peer_config(
    workspace_id: PathId, session_id: PathId, peer_id: PathId, body: SessionPeerConfig, svc: Svc
) -> SessionPeerConfigOut:
    """Change a member's switches; later messages are routed by the new values."""
    await svc.bus.send(
        workspace_id,
        c.ConfigureSessionPeer(
            session_id=session_id,
            peer_id=peer_id,
            observe_me=body.observe_me,
            observe_others=body.observe_others,
        ),
    )
    row = await svc.store.member_config(workspace_id, session_id, peer_id)
    return SessionPeerConfigOut(observe_me=row["observe_me"], observe_others=row["observe_others"])
