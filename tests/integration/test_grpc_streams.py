"""The gRPC gateway's streams, health and reflection on a real stack."""

from __future__ import annotations

import queue
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
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
from mnemo_gateway.grpc_api.server import SERVICE_NAMES
from mnemo_schema.keys import KeyScope


@pytest.fixture(scope="module")
def channel(mnemo, keys):
    address = f"127.0.0.1:{mnemo.grpc_port}"
    with grpc.secure_channel(address, credentials(keys.admin)) as ch:
        grpc.channel_ready_future(ch).result(timeout=30)
        yield ch


def _session(channel: grpc.Channel, ws: str) -> str:
    wg.WorkspaceServiceStub(channel).GetOrCreateWorkspace(
        wp.GetOrCreateWorkspaceRequest(workspace_id=ws)
    )
    sg.SessionServiceStub(channel).GetOrCreateSession(
        sp.GetOrCreateSessionRequest(
            parent=f"workspaces/{ws}",
            session_id="s",
            peers={"ann": rp.SessionPeerConfig(), "ben": rp.SessionPeerConfig()},
        )
    )
    return f"workspaces/{ws}/sessions/s"


def _batch(session: str, i: int) -> mp.StreamMessagesRequest:
    return mp.StreamMessagesRequest(
        parent=session,
        request_id=f"batch-{i}",
        messages=[mp.NewMessage(peer_id="ann", content=f"batch {i} message {j}") for j in range(3)],
    )


def _stored(channel: grpc.Channel, session: str) -> list[str]:
    out: list[str] = []
    token = ""
    stub = mg.MessageServiceStub(channel)
    while True:
        page = stub.ListMessages(
            mp.ListMessagesRequest(parent=session, page_size=100, page_token=token)
        )
        out += [m.content for m in page.messages]
        token = page.next_page_token
        if not token:
            return out


def test_bulk_ingest_acknowledges_each_batch_and_a_cut_stream_keeps_its_prefix(channel, workspace):
    session = _session(channel, workspace)
    stub = mg.MessageServiceStub(channel)
    call = stub.StreamMessages(iter([_batch(session, i) for i in range(6)]))
    acks = []
    for ack in call:
        acks.append(ack)
        if len(acks) == 2:
            call.cancel()  # the client goes away after two acknowledgements
            break
    assert [a.request_id for a in acks] == ["batch-0", "batch-1"]
    assert [a.batches_stored for a in acks] == [1, 2]
    stored = _stored(channel, session)
    # Whole batches only, the acknowledged ones among them, in order.
    assert len(stored) % 3 == 0 and len(stored) >= 6
    assert stored[:6] == [f"batch {i} message {j}" for i in range(2) for j in range(3)]
    # Sent again with the same request ids, every batch is stored exactly once.
    again = list(stub.StreamMessages(iter([_batch(session, i) for i in range(6)])))
    assert [a.batches_stored for a in again] == [1, 2, 3, 4, 5, 6]
    assert sorted(_stored(channel, session)) == sorted(
        f"batch {i} message {j}" for i in range(6) for j in range(3)
    )


def test_a_refused_batch_ends_the_stream_after_the_stored_ones(channel, workspace):
    session = _session(channel, workspace)
    bad = mp.StreamMessagesRequest(
        parent=session, request_id="bad", messages=[mp.NewMessage(peer_id="ann", content="x\x00")]
    )
    call = mg.MessageServiceStub(channel).StreamMessages(
        iter([_batch(session, 0), bad, _batch(session, 2)])
    )
    acks = []
    with pytest.raises(grpc.RpcError) as err:
        for ack in call:
            acks.append(ack.request_id)
    assert acks == ["batch-0"]
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _stored(channel, session) == [f"batch 0 message {j}" for j in range(3)]


def test_chat_streams_its_answer_then_the_evidence(channel, workspace):
    session = _session(channel, workspace)
    mg.MessageServiceStub(channel).CreateMessages(
        mp.CreateMessagesRequest(
            parent=session,
            messages=[mp.NewMessage(peer_id="ann", content="I adopted a puppy named Rex.")],
        )
    )
    updates = list(
        qg.QueueServiceStub(channel).WatchQueueStatus(
            qp.WatchQueueStatusRequest(parent=f"workspaces/{workspace}"), timeout=120
        )
    )
    last = updates[-1].counts
    assert last.total_work_units and not last.pending_work_units and not last.in_progress_work_units
    chunks = list(
        dg.DialecticServiceStub(channel).StreamChat(
            dp.StreamChatRequest(
                name=f"workspaces/{workspace}/peers/ann",
                query="What is the puppy's name?",
                include_evidence=True,
            ),
            timeout=60,
        )
    )
    assert chunks[-1].done and not any(c.done for c in chunks[:-1])
    answer = "".join(c.delta for c in chunks)
    assert "Rex" in answer
    assert chunks[-1].HasField("evidence")


def test_health_answers_serving_per_service_and_reflection_lists_them(channel):
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", *SERVICE_NAMES):
        got = health.Check(health_pb2.HealthCheckRequest(service=name))
        assert got.status == health_pb2.HealthCheckResponse.SERVING, name
    assert {n.split(".")[-1] for n in SERVICE_NAMES} >= {
        "WorkspaceService",
        "PeerService",
        "SessionService",
        "MessageService",
        "ConclusionService",
        "ContextService",
        "DialecticService",
        "QueueService",
        "DreamService",
    }
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    reply = next(
        stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    )
    listed = {s.name for s in reply.list_services_response.service}
    assert set(SERVICE_NAMES) <= listed
    assert "grpc.health.v1.Health" in listed


def test_a_message_larger_than_the_body_limit_is_resource_exhausted(channel, workspace):
    session = _session(channel, workspace)
    huge = mp.CreateMessagesRequest(
        parent=session, messages=[mp.NewMessage(peer_id="ann", content="x" * 9_000_000)]
    )
    with pytest.raises(grpc.RpcError) as err:
        mg.MessageServiceStub(channel).CreateMessages(huge)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def _code(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as err:
        call()
    return err.value.code()


def test_calls_are_authorised_by_their_key_as_http_requests_are(mnemo, channel, keys, workspace):
    session = _session(channel, workspace)
    address = f"127.0.0.1:{mnemo.grpc_port}"
    listing = mp.ListMessagesRequest(parent=session)
    with grpc.insecure_channel(address) as bare:
        assert _code(lambda: mg.MessageServiceStub(bare).ListMessages(listing)) == (
            grpc.StatusCode.UNAUTHENTICATED
        )
    with grpc.secure_channel(address, credentials("not-a-key")) as wrong:
        assert _code(lambda: mg.MessageServiceStub(wrong).ListMessages(listing)) == (
            grpc.StatusCode.UNAUTHENTICATED
        )
    other = keys.mint(KeyScope.WORKSPACE, f"{workspace}-other")
    with grpc.secure_channel(address, credentials(other)) as ch:
        assert _code(lambda: mg.MessageServiceStub(ch).ListMessages(listing)) == (
            grpc.StatusCode.PERMISSION_DENIED
        )
        # A stream's every batch is authorised: the first one already is refused.
        stream = mg.MessageServiceStub(ch).StreamMessages(iter([_batch(session, 0)]))
        assert _code(lambda: list(stream)) == grpc.StatusCode.PERMISSION_DENIED
    assert _stored(channel, session) == []
    own = keys.mint(KeyScope.WORKSPACE, workspace)
    with grpc.secure_channel(address, credentials(own)) as ch:
        assert mg.MessageServiceStub(ch).ListMessages(listing).messages == []
    # A peer key reaches its own peer and no other.
    ann = keys.mint(KeyScope.PEER, workspace, peer="ann")
    parent = f"workspaces/{workspace}"
    with grpc.secure_channel(address, credentials(ann)) as ch:
        peers = pg.PeerServiceStub(ch)
        peers.GetOrCreatePeer(pp.GetOrCreatePeerRequest(parent=parent, peer_id="ann"))
        assert (
            _code(
                lambda: peers.GetOrCreatePeer(
                    pp.GetOrCreatePeerRequest(parent=parent, peer_id="ben")
                )
            )
            == grpc.StatusCode.PERMISSION_DENIED
        )
        assert _code(lambda: mg.MessageServiceStub(ch).ListMessages(listing)) == (
            grpc.StatusCode.PERMISSION_DENIED
        )


def test_a_server_killed_mid_stream_keeps_the_acknowledged_batches_once(
    spawn, own_nats, fresh_database, keys
):
    """SIGKILL of the server while a stream is open: what was acknowledged is stored, once;
    sending the rest again with the same request ids completes it without a duplicate."""
    proc = spawn(own_nats, fresh_database).start()
    address = f"127.0.0.1:{proc.grpc_port}"
    batches = [_batch("workspaces/restart/sessions/s", i) for i in range(6)]
    acknowledged: list[str] = []
    with grpc.secure_channel(address, credentials(keys.admin)) as ch:
        grpc.channel_ready_future(ch).result(timeout=30)
        session = _session(ch, "restart")
        sent: queue.Queue[mp.StreamMessagesRequest | None] = queue.Queue()
        sent.put(batches[0])
        call = mg.MessageServiceStub(ch).StreamMessages(iter(sent.get, None), timeout=60)
        with pytest.raises(grpc.RpcError) as cut:
            for ack in call:
                acknowledged.append(ack.request_id)
                sent.put(batches[len(acknowledged)])  # the next batch, in flight at the kill
                if len(acknowledged) == 2:
                    proc.kill()
        assert cut.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    assert acknowledged == ["batch-0", "batch-1"]
    proc.start()
    with grpc.secure_channel(address, credentials(keys.admin)) as ch:
        grpc.channel_ready_future(ch).result(timeout=30)
        after_restart = _stored(ch, session)
        # The acknowledged batches whole, and at most the one in flight besides.
        assert after_restart[:6] == [f"batch {i} message {j}" for i in range(2) for j in range(3)]
        assert after_restart[6:] in ([], [f"batch 2 message {j}" for j in range(3)])
        # The client sends again everything not acknowledged, with the same request ids.
        acks = list(mg.MessageServiceStub(ch).StreamMessages(iter(batches[2:]), timeout=60))
        assert [a.request_id for a in acks] == [f"batch-{i}" for i in range(2, 6)]
        assert _stored(ch, session) == [
            f"batch {i} message {j}" for i in range(6) for j in range(3)
        ]
