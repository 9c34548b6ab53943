"""gRPC (mnemo.v1, the generated client) at parity with HTTP (the official honcho-ai SDK): the
same scenario through each, in a workspace of its own, compared field by field."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from google.protobuf import json_format, struct_pb2, timestamp_pb2
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status
from honcho import Honcho
from honcho.api_types import SessionPeerConfig
from honcho.http.exceptions import NotFoundError, UnprocessableEntityError
from mnemo.v1 import conclusions_pb2 as cp
from mnemo.v1 import conclusions_pb2_grpc as cg
from mnemo.v1 import context_pb2 as xp
from mnemo.v1 import context_pb2_grpc as xg
from mnemo.v1 import dialectic_pb2 as dp
from mnemo.v1 import dialectic_pb2_grpc as dg
from mnemo.v1 import messages_pb2 as mp
from mnemo.v1 import messages_pb2_grpc as mg
from mnemo.v1 import peers_pb2 as pp
from mnemo.v1 import peers_pb2_grpc as pg
from mnemo.v1 import queue_pb2 as qp
from mnemo.v1 import queue_pb2_grpc as qg
from mnemo.v1 import resources_pb2 as rp
from mnemo.v1 import sessions_pb2 as sp
from mnemo.v1 import sessions_pb2_grpc as sg
from mnemo.v1 import workspaces_pb2 as wp
from mnemo.v1 import workspaces_pb2_grpc as wg

from mnemo_cli.bench_grpc import credentials

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS = [
    ("alice", "I moved to Lisbon last week and I work as a nurse there.", {"n": 1}),
    ("bob", "Nice! How is the weather in Lisbon?", None),
    ("alice", "Sunny. I adopted a cat named Miso yesterday.", None),
    ("bob", "What colour is Miso?", {"tag": "question"}),
    ("alice", "Miso is orange and very loud.", None),
]


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def _stamp(value: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value)
    return out


def _plain(struct: struct_pb2.Struct) -> dict[str, Any]:
    def whole(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: whole(x) for k, x in v.items()}
        return [whole(x) for x in v] if isinstance(v, list) else v

    return whole(json_format.MessageToDict(struct))


def _settle(queue_status: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = queue_status()
        if s.total_work_units and not s.pending_work_units and not s.in_progress_work_units:
            return
        time.sleep(0.2)
    raise AssertionError("memory did not settle")


def http_side(url: str, ws: str) -> dict[str, Any]:
    """The scenario through the official SDK, as plain values."""
    h = Honcho(base_url=url, workspace_id=ws, max_retries=0, timeout=30)
    alice = h.peer("alice", metadata={"role": "user"})
    bob = h.peer("bob")
    h.set_metadata({"plan": "pro", "n": 3})
    s = h.session("s1", metadata={"topic": "moving"})
    s.add_peers([alice, (bob, SessionPeerConfig(observe_others=True))])
    sent = s.add_messages(
        [
            (alice if who == "alice" else bob).message(text, metadata=meta, created_at=AT)
            for who, text, meta in TURNS
        ]
    )
    _settle(h.queue_status)
    page = s.messages(size=2)
    first_page = [m.content for m in page.items]
    s.update_message(sent[1], {"flag": True})
    created = alice.conclusions.create([{"content": "Alice likes oranges.", "session_id": "s1"}])
    ctx = s.context(tokens=500, peer_target="alice", search_query="Where did Alice move to?")
    answer = alice.chat("Where did Alice move to?")
    return {
        "workspace_metadata": h.get_metadata(),
        "peers": sorted((p.id, p.get_metadata()) for p in h.peers()),
        "session": (s.id, s.get_metadata()),
        "members": sorted(p.id for p in s.peers()),
        "bob_config": s.get_peer_configuration(bob).observe_others,
        "messages": [
            (m.peer_id, m.content, m.metadata, m.token_count, m.created_at) for m in s.messages()
        ],
        "first_page": first_page,
        "updated": s.get_message(sent[1].id).metadata,
        "conclusion": [(c.content, c.observer_id, c.observed_id) for c in created],
        "conclusions": sorted(c.content for c in alice.conclusions.list()),
        "context_messages": [m.content for m in ctx.messages],
        "context_representation": ctx.peer_representation,
        "chat": answer,
    }


def grpc_side(channel: grpc.Channel, ws: str) -> dict[str, Any]:
    """The same scenario through the generated gRPC client, as plain values."""
    w = wg.WorkspaceServiceStub(channel)
    p = pg.PeerServiceStub(channel)
    s = sg.SessionServiceStub(channel)
    m = mg.MessageServiceStub(channel)
    c = cg.ConclusionServiceStub(channel)
    x = xg.ContextServiceStub(channel)
    d = dg.DialecticServiceStub(channel)
    q = qg.QueueServiceStub(channel)
    name = f"workspaces/{ws}"
    w.GetOrCreateWorkspace(wp.GetOrCreateWorkspaceRequest(workspace_id=ws))
    w.UpdateWorkspace(
        wp.UpdateWorkspaceRequest(name=name, metadata=_struct({"plan": "pro", "n": 3}))
    )
    p.GetOrCreatePeer(
        pp.GetOrCreatePeerRequest(parent=name, peer_id="alice", metadata=_struct({"role": "user"}))
    )
    p.GetOrCreatePeer(pp.GetOrCreatePeerRequest(parent=name, peer_id="bob"))
    s.GetOrCreateSession(
        sp.GetOrCreateSessionRequest(
            parent=name,
            session_id="s1",
            metadata=_struct({"topic": "moving"}),
            peers={
                "alice": rp.SessionPeerConfig(),
                "bob": rp.SessionPeerConfig(observe_others=True),
            },
        )
    )
    session = f"{name}/sessions/s1"
    sent = m.CreateMessages(
        mp.CreateMessagesRequest(
            parent=session,
            messages=[
                mp.NewMessage(
                    peer_id=who,
                    content=text,
                    metadata=_struct(meta) if meta else None,
                    create_time=_stamp(AT),
                )
                for who, text, meta in TURNS
            ],
        )
    ).messages
    _settle(lambda: q.GetQueueStatus(qp.GetQueueStatusRequest(parent=name)).counts)
    first = m.ListMessages(mp.ListMessagesRequest(parent=session, page_size=2))
    m.UpdateMessage(mp.UpdateMessageRequest(name=sent[1].name, metadata=_struct({"flag": True})))
    created = c.CreateConclusions(
        cp.CreateConclusionsRequest(
            parent=name,
            conclusions=[
                cp.NewConclusion(
                    content="Alice likes oranges.",
                    observer_id="alice",
                    observed_id="alice",
                    session_id="s1",
                )
            ],
        )
    ).conclusions
    ctx = x.GetSessionContext(
        xp.GetSessionContextRequest(
            name=session,
            tokens=500,
            peer_target="alice",
            representation=xp.RepresentationOptions(search_query="Where did Alice move to?"),
        )
    )
    answer = d.Chat(dp.ChatRequest(name=f"{name}/peers/alice", query="Where did Alice move to?"))
    every: list[Any] = []
    token = ""
    while True:  # paging through with the tokens the API gives
        page = m.ListMessages(mp.ListMessagesRequest(parent=session, page_size=2, page_token=token))
        every += page.messages
        token = page.next_page_token
        if not token:
            break
    peers_ = p.ListPeers(pp.ListPeersRequest(parent=name)).peers
    conclusions = c.ListConclusions(
        cp.ListConclusionsRequest(
            parent=name, filter=_struct({"observer_id": "alice", "observed_id": "alice"})
        )
    ).conclusions
    ws_meta = (
        w.ListWorkspaces(wp.ListWorkspacesRequest(filter=_struct({"id": ws})))
        .workspaces[0]
        .metadata
    )
    return {
        "workspace_metadata": _plain(ws_meta),
        "peers": sorted((peer.id, _plain(peer.metadata)) for peer in peers_),
        "session": (
            "s1",
            _plain(s.ListSessions(sp.ListSessionsRequest(parent=name)).sessions[0].metadata),
        ),
        "members": sorted(
            pr.id for pr in s.ListSessionPeers(sp.ListSessionPeersRequest(name=session)).peers
        ),
        "bob_config": s.GetSessionPeerConfig(
            sp.GetSessionPeerConfigRequest(name=f"{session}/peers/bob")
        ).config.observe_others,
        "messages": [
            (
                e.peer_id,
                e.content,
                _plain(e.metadata),
                e.token_count,
                e.create_time.ToDatetime(tzinfo=UTC),
            )
            for e in every
        ],
        "first_page": [e.content for e in first.messages],
        "updated": _plain(m.GetMessage(mp.GetMessageRequest(name=sent[1].name)).message.metadata),
        "conclusion": [(e.content, e.observer_id, e.observed_id) for e in created],
        "conclusions": sorted(e.content for e in conclusions),
        "context_messages": [e.content for e in ctx.messages],
        "context_representation": ctx.peer_representation
        if ctx.HasField("peer_representation")
        else None,
        "chat": answer.content if answer.HasField("content") else None,
    }


@pytest.fixture(scope="module")
def channel(mnemo, keys):
    address = f"127.0.0.1:{mnemo.grpc_port}"
    with grpc.secure_channel(address, credentials(keys.admin)) as ch:
        grpc.channel_ready_future(ch).result(timeout=30)
        yield ch


def test_the_same_scenario_gives_the_same_results_over_http_and_grpc(mnemo, channel, workspace):
    over_http = http_side(mnemo.url, f"{workspace}-http")
    over_grpc = grpc_side(channel, f"{workspace}-grpc")
    for key, value in over_http.items():
        assert over_grpc[key] == value, key
    assert over_http["chat"]  # an answer, the same one


def _details(err: grpc.RpcError) -> tuple[int, list[Any]]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    out: list[Any] = []
    for detail in status.details:
        for kind in (
            error_details_pb2.BadRequest,
            error_details_pb2.ErrorInfo,
            error_details_pb2.RetryInfo,
        ):
            if detail.Is(kind.DESCRIPTOR):
                msg = kind()
                detail.Unpack(msg)
                out.append(msg)
    return status.code, out


def test_errors_name_the_same_fields_as_http(mnemo, channel, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    h.session("s").add_peers([h.peer("a")])
    m = mg.MessageServiceStub(channel)
    s = sg.SessionServiceStub(channel)
    session = f"workspaces/{workspace}/sessions/s"
    with pytest.raises(UnprocessableEntityError) as http_err:
        h.session("s").add_messages([h.peer("a").message("hello\x00world")])
    with pytest.raises(grpc.RpcError) as grpc_err:
        m.CreateMessages(
            mp.CreateMessagesRequest(
                parent=session, messages=[mp.NewMessage(peer_id="a", content="hello\x00world")]
            )
        )
    code, details = _details(grpc_err.value)
    assert code == code_pb2.INVALID_ARGUMENT
    (bad,) = [d for d in details if isinstance(d, error_details_pb2.BadRequest)]
    assert bad.field_violations[0].field == "messages.0.content"
    assert "messages.0.content" in str(http_err.value)
    assert any(
        isinstance(d, error_details_pb2.ErrorInfo) and d.reason == "INVALID_FIELD" for d in details
    )

    with pytest.raises(NotFoundError):
        h.session("nope").get_message("x")
    with pytest.raises(grpc.RpcError) as grpc_err:
        s.GetSessionPeerConfig(
            sp.GetSessionPeerConfigRequest(name=f"workspaces/{workspace}/sessions/nope/peers/a")
        )
    assert grpc_err.value.code() == grpc.StatusCode.NOT_FOUND

    too_many = [mp.NewMessage(peer_id="a", content=str(i)) for i in range(101)]
    with pytest.raises(grpc.RpcError) as grpc_err:
        m.CreateMessages(mp.CreateMessagesRequest(parent=session, messages=too_many))
    assert grpc_err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(grpc.RpcError) as grpc_err:
        m.ListMessages(mp.ListMessagesRequest(parent="workspaces/a.b/sessions/s"))
    code, details = _details(grpc_err.value)
    assert code == code_pb2.INVALID_ARGUMENT
    assert (
        next(d for d in details if isinstance(d, error_details_pb2.BadRequest))
        .field_violations[0]
        .field
        == "workspace_id"
    )
    # Nothing of the refused batches was written.
    assert m.ListMessages(mp.ListMessagesRequest(parent=session)).messages == []
