"""The local deriver on real BEAM turns (chat 1, of the tuning half): long technical requests,
whose statements come before what they ask."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mnemo_deriver.contract import (
    BatchMessage,
    span_in_message,
)
from mnemo_deriver.local import derive

DATASETS = Path(
    os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / ".." / "shared" / "datasets")
).resolve()
CHAT = DATASETS / "beam-100k" / "1" / "chat.json"

pytestmark = pytest.mark.skipif(
    not CHAT.exists(), reason=f"BEAM not found at {CHAT} (set MNEMO_DATASETS)"
)
ASKING = re.compile(r"\b(?:can|could|would) (?:you|I)\b|\bhow (?:do|can|should) I\b|\?", re.I)


def turns() -> list[dict[str, Any]]:
    chat = json.loads(CHAT.read_text())
    return [m for batch in chat for pair in batch["turns"] for m in pair]


def derive_user() -> dict[str, list[str]]:
    """Each user message with the assistant's turn before it as context: its facts by id."""
    when = datetime(2024, 3, 15, tzinfo=UTC)
    found: dict[str, list[str]] = {}
    previous: dict[str, Any] | None = None
    for m in turns():
        if m["role"] == "user":
            batch = [BatchMessage(1, "user", m["content"], when)]
            if previous is not None:
                batch.insert(0, BatchMessage(0, "assistant", previous["content"], when, True))
            output = derive("user", batch)
            for o in output.observations:
                assert o.source_message_index == 1, o
                assert span_in_message(o.source_span, m["content"]), o
            found[str(m["id"])] = [o.fact for o in output.observations]
        previous = m
    return found


STATED = [
    # "I'm working on a project with a Time Anchor of March 15, 2024, and I need to plan my
    # tasks accordingly, can you help me create a schedule ...?"
    ("0", "User is working on a project with a Time Anchor of March 15, 2024."),
    # "... and the first sprint ends on March 29, focusing on user registration and login."
    ("28", "the first sprint ends on March 29"),
    # "... so I prefer simple, minimal dependencies, how can I ensure that my Flask app stays
    # minimal ..., considering I'm using Flask 2.3.1 and targeting a local dev environment ..."
    ("34", "User prefers simple, minimal dependencies."),
    ("34", "User is using Flask 2.3.1 and targeting a local dev environment on port 5000."),
    # "I'm trying to plan out my project and I want to make sure I meet the April 15 deadline
    # for the MVP scope, ..., can you help me create a schedule ...?"
    ("8", "User wants to make sure User meets the April 15 deadline for the MVP scope"),
]


def test_statements_before_a_request_are_extracted_and_the_requests_are_not() -> None:
    found = derive_user()

    for turn, fact in STATED:
        assert any(fact in f for f in found[turn]), (turn, fact, found[turn])
    asked = [f for facts in found.values() for f in facts if ASKING.search(f)]
    assert not asked
    # Most of the user's messages state something about the user before they ask.
    stating = sum(1 for facts in found.values() if facts)
    assert stating / len(found) >= 0.8, (stating, len(found))
