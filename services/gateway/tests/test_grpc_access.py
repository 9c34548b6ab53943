"""Every RPC is authorised as the HTTP operation it mirrors, by the same rule table."""

from __future__ import annotations

import pytest
from mnemo.v1 import (
    conclusions_pb2,
    context_pb2,
    dialectic_pb2,
    dreams_pb2,
    messages_pb2,
    peers_pb2,
    queue_pb2,
    sessions_pb2,
    workspaces_pb2,
)

from mnemo_gateway.auth.keyring import Claims
from mnemo_gateway.auth.policy import RULES, authorise
from mnemo_gateway.grpc_api.access import RPCS, operation_of
from mnemo_schema.errors import Refusal
from mnemo_schema.keys import KeyScope

_FILES = (
    conclusions_pb2,
    context_pb2,
    dialectic_pb2,
    dreams_pb2,
    messages_pb2,
    peers_pb2,
    queue_pb2,
    sessions_pb2,
    workspaces_pb2,
)
RPC_NAMES = sorted(
    m.name for f in _FILES for s in f.DESCRIPTOR.services_by_name.values() for m in s.methods
)


@pytest.mark.parametrize("rpc", RPC_NAMES)
def test_every_rpc_mirrors_an_operation_with_a_rule(rpc: str) -> None:
    operation, _ = operation_of(rpc, {"workspace_id": "w"})
    assert operation in RULES, operation


def test_an_rpc_without_an_entry_is_refused() -> None:
    with pytest.raises(Refusal) as err:
        operation_of("DropEverything", {"workspace_id": "w"})
    assert err.value.status == 403


def test_no_entry_names_an_rpc_that_does_not_exist() -> None:
    assert set(RPCS) <= set(RPC_NAMES)


PEER = Claims("k", KeyScope.PEER, "w", peer="ann")


@pytest.mark.parametrize(
    ("rpc", "ids", "allowed"),
    [
        ("GetOrCreatePeer", {"workspace_id": "w", "peer_id": "ann"}, True),
        ("GetOrCreatePeer", {"workspace_id": "w", "peer_id": "ben"}, False),
        ("SearchMessages", {"workspace_id": "w", "peer_id": "ann"}, True),
        ("SearchMessages", {"workspace_id": "w"}, False),
        ("Chat", {"workspace_id": "w", "peer_id": "ann"}, True),
        ("Chat", {"workspace_id": "x", "peer_id": "ann"}, False),
        ("ListMessages", {"workspace_id": "w", "session_id": "s"}, False),
    ],
)
def test_a_peer_key_reaches_its_peer_over_grpc(
    rpc: str, ids: dict[str, str], allowed: bool
) -> None:
    operation, named = operation_of(rpc, ids)
    if allowed:
        assert authorise(PEER, operation, named).peer == "ann"
    else:
        with pytest.raises(Refusal) as err:
            authorise(PEER, operation, named)
        assert err.value.status == 403
