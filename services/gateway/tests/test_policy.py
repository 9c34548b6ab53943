"""Who reaches what: the policy decides from the key and the ids alone."""

from __future__ import annotations

import pytest

from mnemo_gateway.auth.keyring import Claims
from mnemo_gateway.auth.policy import RULES, authorise, rule_of
from mnemo_schema.errors import Refusal
from mnemo_schema.keys import KeyScope

ADMIN = Claims("k1", KeyScope.ADMIN)
WS = Claims("k2", KeyScope.WORKSPACE, "w")
PEER = Claims("k3", KeyScope.PEER, "w", peer="alice")
SESSION = Claims("k4", KeyScope.SESSION, "w", session="s")
OTHER = Claims("k5", KeyScope.WORKSPACE, "v")

CHAT = ("POST", "/v3/workspaces/{workspace_id}/peers/{peer_id}/chat")
MESSAGES = ("POST", "/v3/workspaces/{workspace_id}/sessions/{session_id}/messages")
ENSURE_WS = ("POST", "/v3/workspaces")
ENSURE_PEER = ("POST", "/v3/workspaces/{workspace_id}/peers")
QUEUE = ("GET", "/v3/workspaces/{workspace_id}/queue/status")
LIST_WS = ("POST", "/v3/workspaces/list")


def allowed(claims: Claims, op: tuple[str, str], **ids: str) -> bool:
    try:
        authorise(claims, op, ids)
    except Refusal as err:
        assert err.status == 403 and err.field == "authorization"
        return False
    return True


@pytest.mark.parametrize(
    ("claims", "op", "ids", "expected"),
    [
        (ADMIN, LIST_WS, {}, True),
        (WS, LIST_WS, {}, False),
        (WS, CHAT, {"workspace_id": "w", "peer_id": "bob"}, True),
        (OTHER, CHAT, {"workspace_id": "w", "peer_id": "bob"}, False),
        (PEER, CHAT, {"workspace_id": "w", "peer_id": "alice"}, True),
        (PEER, CHAT, {"workspace_id": "w", "peer_id": "bob"}, False),
        (PEER, CHAT, {"workspace_id": "v", "peer_id": "alice"}, False),
        (PEER, MESSAGES, {"workspace_id": "w", "session_id": "s"}, False),
        (SESSION, MESSAGES, {"workspace_id": "w", "session_id": "s"}, True),
        (SESSION, MESSAGES, {"workspace_id": "w", "session_id": "t"}, False),
        (SESSION, CHAT, {"workspace_id": "w", "peer_id": "alice"}, False),
        # Ids named in the body: the tenant is the key's, the body may only repeat it.
        (WS, ENSURE_WS, {"body.id": "w"}, True),
        (WS, ENSURE_WS, {"body.id": "v"}, False),
        (WS, ENSURE_WS, {}, False),
        (PEER, ENSURE_WS, {"body.id": "w"}, True),
        (SESSION, ENSURE_WS, {"body.id": "w"}, True),
        (PEER, ENSURE_PEER, {"workspace_id": "w", "body.id": "alice"}, True),
        (PEER, ENSURE_PEER, {"workspace_id": "w", "body.id": "bob"}, False),
        (SESSION, QUEUE, {"workspace_id": "w", "query.session_id": "s"}, True),
        (SESSION, QUEUE, {"workspace_id": "w"}, False),
        (PEER, QUEUE, {"workspace_id": "w"}, False),
    ],
)
def test_each_key_reaches_exactly_its_own(
    claims: Claims, op: tuple[str, str], ids: dict[str, str], expected: bool
) -> None:
    assert allowed(claims, op, **ids) is expected


def test_an_operation_without_a_rule_is_refused_to_every_key() -> None:
    new = ("DELETE", "/v3/workspaces/{workspace_id}/sessions/{session_id}/messages/{id}")
    assert rule_of(new) is None
    for claims in (ADMIN, WS, PEER, SESSION):
        assert not allowed(claims, new, workspace_id="w", session_id="s")


def test_public_operations_take_no_parameters_and_head_is_get() -> None:
    public = [op for op, rule in RULES.items() if rule.public]
    assert ("GET", "/health") in public and all("{" not in t for _, t in public)
    assert rule_of(("HEAD", "/health")) is rule_of(("GET", "/health"))
    assert rule_of(("POST", "/health")) is None


def test_a_refusal_reveals_nothing_but_what_the_caller_sent() -> None:
    with pytest.raises(Refusal) as err:
        authorise(OTHER, CHAT, {"workspace_id": "w", "peer_id": "bob"})
    assert "bob" not in err.value.detail and "w'" not in err.value.detail
