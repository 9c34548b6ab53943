"""A received event: kept as its bytes until its batch asks for it, then decoded once; and the
projector's limit on what it holds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from mnemo_projector.quarantine import Delivered
from mnemo_projector.settings import ProjectorSettings
from mnemo_schema.events import MessagePosted, encode_event


def _posted() -> MessagePosted:
    return MessagePosted(
        workspace="w",
        session_id="s",
        message_id="m1",
        peer_id="a",
        content="hello",
        metadata={},
        created_at=datetime.now(UTC),
        token_count=1,
    )


def test_an_event_is_decoded_when_first_asked_for_and_once() -> None:
    event = _posted()
    item = Delivered(7, event.subject(), encode_event(event))
    first = item.event
    assert first == event and item.error is None
    assert item.event is first


def test_an_event_that_does_not_decode_says_why() -> None:
    item = Delivered(8, "mnemo.evt.w.0.msg.s", b'{"type": "MessagePosted"}')
    assert item.event is None
    assert item.error is not None and "workspace" in item.error


def test_the_limit_on_held_events_holds_a_batch_at_least() -> None:
    with pytest.raises(ValidationError, match="held_events"):
        ProjectorSettings(held_events=100, batch_size=1000)
    assert ProjectorSettings(held_events=1000).held_events == 1000
