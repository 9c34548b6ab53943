"""Session summaries end to end: SDK -> ingest -> summarizer -> projection -> summaries API."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from honcho import Honcho
from honcho.api_types import MessageCreateParams

DATA = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "shared" / "datasets"))
LOCOMO = DATA / "locomo" / "locomo-dev5.json"


def locomo_turns(count: int) -> list[dict[str, str]]:
    """The first ``count`` turns of LoCoMo conv-26, across its sessions in order."""
    conv = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")
    turns: list[dict[str, str]] = []
    n = 1
    while len(turns) < count and f"session_{n}" in conv["conversation"]:
        turns += conv["conversation"][f"session_{n}"]
        n += 1
    return turns[:count]


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_sixty_turns_give_short_and_long_summaries_of_the_right_messages(mnemo, workspace, until):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    session = h.session("chat")
    session.add_peers([h.peer("caroline"), h.peer("melanie")])
    turns = locomo_turns(65)
    sent = []
    for start in range(0, len(turns), 20):
        sent += session.add_messages(
            [
                MessageCreateParams(peer_id=t["speaker"].lower(), content=t["text"])
                for t in turns[start : start + 20]
            ]
        )
    assert len(sent) == 65

    def summarized() -> bool:
        s = session.summaries()
        return (
            s.short_summary is not None
            and s.long_summary is not None
            and s.short_summary.message_id == sent[59].id
        )

    until(summarized, timeout=60)
    summaries = session.summaries()
    short, long = summaries.short_summary, summaries.long_summary
    assert short is not None and long is not None
    # Short summaries fall due every 20 messages and long ones every 60: both cover message 60.
    assert long.message_id == sent[59].id
    assert short.summary_type == "short" and long.summary_type == "long"
    for summary in (short, long):
        assert "caroline" in summary.content.lower()
        assert "melanie" in summary.content.lower()
        assert summary.token_count > 0
