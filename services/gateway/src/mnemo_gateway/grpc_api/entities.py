"""WorkspaceService, PeerService, SessionService: the HTTP routes' own functions behind them."""

from __future__ import annotations

from typing import Any

from fastapi import Response
from mnemo.v1 import peers_pb2 as pp
from mnemo.v1 import peers_pb2_grpc, sessions_pb2_grpc, workspaces_pb2_grpc
from mnemo.v1 import resources_pb2 as pb
from mnemo.v1 import sessions_pb2 as sp
from mnemo.v1 import workspaces_pb2 as wp

from mnemo_gateway import api
from mnemo_gateway.deps import Paging, Services
from mnemo_gateway.grpc_api import convert as cv
from mnemo_gateway.grpc_api.calls import Calls
from mnemo_gateway.routes import peers, sessions, workspaces
from mnemo_schema.config import SessionPeerConfig

W, P, S = "workspaces/*", "workspaces/*/peers/*", "workspaces/*/sessions/*"
MEMBER = "workspaces/*/sessions/*/peers/*"


def _name(pattern: str, field: str = "name") -> Any:
    return lambda r: cv.ids_of(getattr(r, field), pattern, field)


def _created(pattern: str, id_field: str) -> Any:
    # The parent's ids and the id of what is created (a key may create only what it names).
    return lambda r: {**cv.ids_of(r.parent, pattern, "parent"), id_field: getattr(r, id_field)}


def _page(request: Any) -> Paging:
    page, size = cv.paging(request.page_size, request.page_token)
    return Paging(page, size, request.reverse)


def _list_body(request: Any) -> api.ListBody | None:
    filters = cv.struct_of(request, "filter")
    return None if filters is None else api.ListBody(filters=filters)


def _update(model: type[Any], request: Any) -> Any:
    fields = {}
    for field in ("metadata", "configuration"):
        value = cv.struct_of(request, field)
        if cv.mask_allows(
            request.update_mask if request.HasField("update_mask") else None,
            field,
            value is not None,
        ):
            fields[field] = value if value is not None else {}
    return model(**fields)


def _peer_configs(peers_: Any) -> dict[str, SessionPeerConfig]:
    return {
        pid: SessionPeerConfig(
            observe_me=cv.optional(c, "observe_me"), observe_others=cv.optional(c, "observe_others")
        )
        for pid, c in peers_.items()
    }


def _config(c: Any) -> pb.SessionPeerConfig:
    return pb.SessionPeerConfig(observe_me=c.observe_me, observe_others=c.observe_others)


def workspace_servicer(svc: Services, calls: Calls) -> workspaces_pb2_grpc.WorkspaceServiceServicer:
    class Workspaces(workspaces_pb2_grpc.WorkspaceServiceServicer):
        @calls.unary("GetOrCreateWorkspace", lambda r: {"workspace_id": r.workspace_id})
        async def GetOrCreateWorkspace(self, request: Any, context: Any) -> Any:
            body = api.WorkspaceCreate(
                id=request.workspace_id,
                metadata=cv.struct_of(request, "metadata"),
                configuration=cv.struct_of(request, "configuration"),
            )
            response = Response()
            out = await workspaces.get_or_create_workspace(body, svc, response)
            return wp.GetOrCreateWorkspaceResponse(
                workspace=cv.workspace(out), created=response.status_code == 201
            )

        @calls.unary("UpdateWorkspace", _name(W))
        async def UpdateWorkspace(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, W)
            out = await workspaces.update_workspace(
                ids["workspace_id"], _update(api.WorkspaceUpdate, request), svc
            )
            return wp.UpdateWorkspaceResponse(workspace=cv.workspace(out))

        @calls.unary("ListWorkspaces", lambda r: {})
        async def ListWorkspaces(self, request: Any, context: Any) -> Any:
            paging = _page(request)
            page = await workspaces.list_workspaces(svc, paging, _list_body(request))
            return wp.ListWorkspacesResponse(
                workspaces=[cv.workspace(w) for w in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

        @calls.unary("DeleteWorkspace", _name(W))
        async def DeleteWorkspace(self, request: Any, context: Any) -> Any:
            await workspaces.delete_workspace(cv.ids_of(request.name, W)["workspace_id"], svc)
            return wp.DeleteWorkspaceResponse()

    return Workspaces()


def peer_servicer(svc: Services, calls: Calls) -> peers_pb2_grpc.PeerServiceServicer:
    class Peers(peers_pb2_grpc.PeerServiceServicer):
        @calls.unary("GetOrCreatePeer", _created(W, "peer_id"))
        async def GetOrCreatePeer(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            body = api.PeerCreate(
                id=request.peer_id,
                metadata=cv.struct_of(request, "metadata"),
                configuration=cv.struct_of(request, "configuration"),
            )
            response = Response()
            out = await peers.get_or_create_peer(ws, body, svc, response)
            return pp.GetOrCreatePeerResponse(
                peer=cv.peer(out), created=response.status_code == 201
            )

        @calls.unary("UpdatePeer", _name(P))
        async def UpdatePeer(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            body = _update(api.PeerUpdate, request)
            out = await peers.update_peer(ids["workspace_id"], ids["peer_id"], body, svc)
            return pp.UpdatePeerResponse(peer=cv.peer(out))

        @calls.unary("ListPeers", _name(W, "parent"))
        async def ListPeers(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            paging = _page(request)
            page = await peers.list_peers(ws, svc, paging, _list_body(request))
            return pp.ListPeersResponse(
                peers=[cv.peer(p) for p in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

        @calls.unary("ListPeerSessions", _name(P))
        async def ListPeerSessions(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            paging = _page(request)
            page = await peers.list_peer_sessions(
                ids["workspace_id"], ids["peer_id"], svc, paging, _list_body(request)
            )
            return pp.ListPeerSessionsResponse(
                sessions=[cv.session(s) for s in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

    return Peers()


def session_servicer(svc: Services, calls: Calls) -> sessions_pb2_grpc.SessionServiceServicer:
    class Sessions(sessions_pb2_grpc.SessionServiceServicer):
        @calls.unary("GetOrCreateSession", _created(W, "session_id"))
        async def GetOrCreateSession(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            body = api.SessionCreate(
                id=request.session_id,
                metadata=cv.struct_of(request, "metadata"),
                configuration=cv.struct_of(request, "configuration"),
                peers=_peer_configs(request.peers) or None,
            )
            response = Response()
            out = await sessions.get_or_create_session(ws, body, svc, response)
            return sp.GetOrCreateSessionResponse(
                session=cv.session(out), created=response.status_code == 201
            )

        @calls.unary("UpdateSession", _name(S))
        async def UpdateSession(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            body = _update(api.SessionUpdate, request)
            out = await sessions.update_session(ids["workspace_id"], ids["session_id"], body, svc)
            return sp.UpdateSessionResponse(session=cv.session(out))

        @calls.unary("ListSessions", _name(W, "parent"))
        async def ListSessions(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            paging = _page(request)
            page = await sessions.list_sessions(ws, svc, paging, _list_body(request))
            return sp.ListSessionsResponse(
                sessions=[cv.session(s) for s in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

        @calls.unary("DeleteSession", _name(S))
        async def DeleteSession(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            await sessions.delete_session(ids["workspace_id"], ids["session_id"], svc)
            return sp.DeleteSessionResponse()

        @calls.unary("AddSessionPeers", _name(S))
        async def AddSessionPeers(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            members = _peer_configs(request.peers)
            add = sessions.set_session_peers if request.replace else sessions.add_session_peers
            out = await add(ids["workspace_id"], ids["session_id"], members, svc)
            return sp.AddSessionPeersResponse(session=cv.session(out))

        @calls.unary("RemoveSessionPeers", _name(S))
        async def RemoveSessionPeers(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            out = await sessions.remove_session_peers(
                ids["workspace_id"], ids["session_id"], list(request.peer_ids), svc
            )
            return sp.RemoveSessionPeersResponse(session=cv.session(out))

        @calls.unary("ListSessionPeers", _name(S))
        async def ListSessionPeers(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            paging = _page(request)
            page = await sessions.list_session_peers(
                ids["workspace_id"], ids["session_id"], svc, paging
            )
            return sp.ListSessionPeersResponse(
                peers=[cv.peer(p) for p in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

        @calls.unary("GetSessionPeerConfig", _name(MEMBER))
        async def GetSessionPeerConfig(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, MEMBER)
            out = await sessions.get_session_peer_config(
                ids["workspace_id"], ids["session_id"], ids["peer_id"], svc
            )
            return sp.GetSessionPeerConfigResponse(config=_config(out))

        @calls.unary("SetSessionPeerConfig", _name(MEMBER))
        async def SetSessionPeerConfig(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, MEMBER)
            config = _peer_configs({"p": request.config})["p"]
            out = await sessions.set_session_peer_config(
                ids["workspace_id"], ids["session_id"], ids["peer_id"], config, svc
            )
            return sp.SetSessionPeerConfigResponse(config=_config(out))

    return Sessions()
