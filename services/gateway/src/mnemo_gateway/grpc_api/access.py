"""Keys on gRPC: each RPC is authorised as the HTTP operation it stands for.

A call sends its key as ``authorization: Bearer <key>`` metadata, as HTTP sends the header. Each
RPC maps to the HTTP operation (method and route template) it mirrors, and the ids its request
names map to that operation's parameters, so one rule table (``auth.policy``) decides both
transports: a new RPC without an entry here is refused to every key.

A client-streaming RPC authenticates its key once when the stream opens and authorises every
request of it against the ids that request names.
"""

from __future__ import annotations

from collections.abc import Mapping

from mnemo_gateway.auth.authority import Authority, bearer
from mnemo_gateway.auth.policy import Operation
from mnemo_schema.errors import Refusal

_W = "/v3/workspaces/{workspace_id}"
_P = _W + "/peers/{peer_id}"
_S = _W + "/sessions/{session_id}"

# RPC -> (the HTTP operation it mirrors, its ids renamed to that operation's parameters)
RPCS: dict[str, tuple[Operation, Mapping[str, str]]] = {
    "GetOrCreateWorkspace": (("POST", "/v3/workspaces"), {"workspace_id": "body.id"}),
    "UpdateWorkspace": (("PUT", _W), {}),
    "ListWorkspaces": (("POST", "/v3/workspaces/list"), {}),
    "DeleteWorkspace": (("DELETE", _W), {}),
    "GetOrCreatePeer": (("POST", _W + "/peers"), {"peer_id": "body.id"}),
    "UpdatePeer": (("PUT", _P), {}),
    "ListPeers": (("POST", _W + "/peers/list"), {}),
    "ListPeerSessions": (("POST", _P + "/sessions"), {}),
    "GetOrCreateSession": (("POST", _W + "/sessions"), {"session_id": "body.id"}),
    "UpdateSession": (("PUT", _S), {}),
    "ListSessions": (("POST", _W + "/sessions/list"), {}),
    "DeleteSession": (("DELETE", _S), {}),
    "AddSessionPeers": (("POST", _S + "/peers"), {}),
    "RemoveSessionPeers": (("DELETE", _S + "/peers"), {}),
    "ListSessionPeers": (("GET", _S + "/peers"), {}),
    "GetSessionPeerConfig": (("GET", _S + "/peers/{peer_id}/config"), {}),
    "SetSessionPeerConfig": (("PUT", _S + "/peers/{peer_id}/config"), {}),
    "CreateMessages": (("POST", _S + "/messages"), {}),
    "StreamMessages": (("POST", _S + "/messages"), {}),
    "ListMessages": (("POST", _S + "/messages/list"), {}),
    "GetMessage": (("GET", _S + "/messages/{message_id}"), {}),
    "UpdateMessage": (("PUT", _S + "/messages/{message_id}"), {}),
    "CreateConclusions": (("POST", _W + "/conclusions"), {}),
    "ListConclusions": (("POST", _W + "/conclusions/list"), {}),
    "QueryConclusions": (("POST", _W + "/conclusions/query"), {}),
    "GetConclusion": (("GET", _W + "/conclusions/{conclusion_id}"), {}),
    "DeleteConclusion": (("DELETE", _W + "/conclusions/{conclusion_id}"), {}),
    "GetSessionContext": (("GET", _S + "/context"), {}),
    "GetPeerRepresentation": (("POST", _P + "/representation"), {}),
    "GetPeerContext": (("GET", _P + "/context"), {}),
    "GetPeerCard": (("GET", _P + "/card"), {}),
    "SetPeerCard": (("PUT", _P + "/card"), {}),
    "GetSummaries": (("GET", _S + "/summaries"), {}),
    "GetQueueStatus": (("GET", _W + "/queue/status"), {"session_id": "query.session_id"}),
    "WatchQueueStatus": (("GET", _W + "/queue/status"), {"session_id": "query.session_id"}),
    "ScheduleDream": (("POST", _W + "/schedule_dream"), {}),
    "Chat": (("POST", _P + "/chat"), {}),
    "StreamChat": (("POST", _P + "/chat"), {}),
}

# A search's operation is chosen by what its parent names.
_SEARCHES: dict[str, Operation] = {
    "peer_id": ("POST", _P + "/search"),
    "session_id": ("POST", _S + "/search"),
}
_WORKSPACE_SEARCH: Operation = ("POST", _W + "/search")

# Whose requests arrive as a stream: the key is checked when it opens, each request's ids later.
STREAMED_IN = frozenset({"StreamMessages"})


def operation_of(rpc: str, ids: Mapping[str, str]) -> tuple[Operation, dict[str, str | None]]:
    """The HTTP operation ``rpc`` stands for and its ids under that operation's names."""
    if rpc == "SearchMessages":
        named = next((_SEARCHES[k] for k in _SEARCHES if k in ids), _WORKSPACE_SEARCH)
        return named, dict(ids)
    if rpc not in RPCS:
        raise Refusal(403, f"authorization: no key may call {rpc}", "authorization")
    operation, renamed = RPCS[rpc]
    return operation, {renamed.get(k, k): v for k, v in ids.items()}


class KeyAuthorizer:
    """The gRPC gateway's ``Authorizer``: the authority's decision for the mirrored operation."""

    def __init__(self, authority: Authority) -> None:
        self.authority = authority

    async def __call__(
        self, metadata: Mapping[str, str], operation: str, ids: Mapping[str, str]
    ) -> None:
        """Raise the 401 / 403 refusal unless the call's key reaches ``operation`` on ``ids``."""
        if not self.authority.enabled:
            return
        token = bearer(metadata["authorization"]) if "authorization" in metadata else None
        if operation in STREAMED_IN and not ids:
            self.authority.authenticate(token)
            return
        http, named = operation_of(operation, ids)
        self.authority.authorise(token, http, named)
