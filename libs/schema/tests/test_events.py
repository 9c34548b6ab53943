"""Events and commands round-trip through JSON; subjects are what consumers filter on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from mnemo_schema import subjects
from mnemo_schema.commands import COMMAND_ADAPTER, PostMessages
from mnemo_schema.events import (
    MessagePosted,
    PeerCreated,
    Representation,
    decode_event,
    encode_event,
)


def test_event_round_trip_keeps_type_and_fields():
    e = MessagePosted(
        workspace="w",
        session_id="s",
        message_id="m1",
        peer_id="p",
        content="hi",
        metadata={"a": 1},
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        token_count=1,
        representations=[Representation(observer="p", observed="p")],
    )
    back = decode_event(encode_event(e))
    assert back == e
    assert e.subject() == "mnemo.evt.w.msg.s"
    assert PeerCreated(workspace="w", peer_id="p", metadata={}).subject() == "mnemo.evt.w.ent.peer"


def test_ids_that_would_break_subjects_are_rejected():
    with pytest.raises(ValidationError):
        PeerCreated(workspace="w.x", peer_id="p", metadata={})


def test_commands_are_discriminated_by_kind():
    cmd = COMMAND_ADAPTER.validate_json(
        b'{"kind": "post_messages", "session_id": "s", "messages": [{"peer_id": "p", "content": "x"}]}'
    )
    assert isinstance(cmd, PostMessages)
    with pytest.raises(ValidationError):
        COMMAND_ADAPTER.validate_json(
            b'{"kind": "post_messages", "session_id": "s", "messages": []}'
        )
    assert subjects.workspace_from_command_subject(subjects.command_subject("w1")) == "w1"


def test_a_stored_filter_narrowed_to_one_workspace_matches_its_events_alone():
    narrowed = [subjects.of_workspace(f, "w1") for f in subjects.erasure_filters(3)]
    assert narrowed[0] == "mnemo.evt.w1.3.ent.session"
    assert subjects.of_workspace(subjects.observation_filter(3), "w1") == "mnemo.evt.w1.3.obs.>"
    assert subjects.workspace_of_subject(narrowed[0]) == "w1"
    with pytest.raises(ValueError, match="not a filter of stored events"):
        subjects.of_workspace("mnemo.evt.w2.3.obs.>", "w1")


def test_published_documents_are_current():
    """The committed JSON Schema / AsyncAPI files match the code (run `make schema` to refresh)."""
    import json
    from pathlib import Path

    from mnemo_schema.publish import documents

    folder = Path(__file__).parents[1] / "published"
    for name, doc in documents().items():
        assert json.loads((folder / name).read_text()) == json.loads(json.dumps(doc)), name
