"""Configuration honoured through the SDK: reasoning switched off forms no memory, counts no work
units and dreams no dream; a peer card not to be used is not put in front of the caller."""

from __future__ import annotations

import uuid

from honcho import Honcho
from honcho.api_types import (
    PeerCardConfiguration,
    ReasoningConfiguration,
    SessionConfiguration,
    WorkspaceConfiguration,
)

OFF = {"reasoning": {"enabled": False}}


def test_reasoning_switched_off_at_any_level_forms_no_memory(settle, mnemo, workspace):
    quiet_ws = f"{workspace}-quiet"
    q = Honcho(
        base_url=mnemo.url,
        workspace_id=quiet_ws,
        max_retries=0,
        timeout=30,
    )
    q_alice = q.peer("alice")  # the workspace exists from here
    q.set_configuration(WorkspaceConfiguration(reasoning=ReasoningConfiguration(enabled=False)))
    q.session("s", peers=[q_alice]).add_messages([q_alice.message("I work as a nurse in Lisbon.")])

    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    alice = h.peer("alice")
    quiet = h.session(
        "quiet",
        peers=[alice],
        configuration=SessionConfiguration(reasoning=ReasoningConfiguration(enabled=False)),
    )
    quiet.add_messages([alice.message("My bank PIN is 4417.")])
    loud = h.session("loud", peers=[alice])
    loud.add_messages(
        [
            alice.message("I keep a diary about my sister Ana.", configuration=OFF),
            alice.message("I live in Porto with my cat."),
        ]
    )
    # Posted last, the one message that is derived: once its work is done, the deriver has
    # been past every earlier one.
    settle(h)
    status = h.queue_status()
    # That message's units: its one representation's derivation, and the summarizer's count.
    assert status.total_work_units == 2 and status.completed_work_units == 2
    contents = " ".join(c.content for c in alice.conclusions.list())
    assert "Porto" in contents
    assert "4417" not in contents and "Ana" not in contents
    assert q.queue_status().total_work_units == 0
    assert list(q_alice.conclusions.list()) == []
    # A dream asked for in a workspace that forms no memory makes no edit either.
    q.schedule_dream("alice")


def test_a_peer_card_not_to_be_used_stays_out_of_the_context(mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    alice = h.peer("alice")
    session = h.session("s", peers=[alice])
    session.add_messages([alice.message("Hello there.")])
    alice.set_card(["Name: Alice", "Works as a nurse"])
    assert session.context(peer_target="alice").peer_card == ["Name: Alice", "Works as a nurse"]
    h.set_configuration(WorkspaceConfiguration(peer_card=PeerCardConfiguration(use=False)))
    assert session.context(peer_target="alice").peer_card is None
    assert alice.context().peer_card is None
    # The session's own configuration overrides the workspace's.
    uid = uuid.uuid4().hex[:6]
    other = h.session(
        f"s-{uid}",
        peers=[alice],
        configuration=SessionConfiguration(peer_card=PeerCardConfiguration(use=True)),
    )
    other.add_messages([alice.message("Hi.")])
    assert other.context(peer_target="alice").peer_card == ["Name: Alice", "Works as a nurse"]
