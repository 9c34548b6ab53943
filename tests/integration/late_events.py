"""Events the eraser's late-work tests publish: a message of ann's and what was derived from it."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_schema.events import MessagePosted
from mnemo_schema.observations import ObservationWritten

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def message(ws: str, mid: str) -> MessagePosted:
    """Ann's message ``mid`` in session s of ``ws``."""
    return MessagePosted(
        workspace=ws,
        session_id="s",
        message_id=mid,
        peer_id="ann",
        content="I am a nurse.",
        metadata={},
        created_at=NOW,
        token_count=4,
    )


def observation(ws: str, oid: str, mid: str) -> ObservationWritten:
    """Ann's explicit observation ``oid`` of herself, derived from message ``mid``."""
    return ObservationWritten(
        workspace=ws,
        observation_id=oid,
        observer="ann",
        observed="ann",
        session_id="s",
        level="explicit",
        content="Ann is a nurse.",
        source_message_ids=[mid],
        source_message_seqs=[1],
        observed_at=NOW,
        origin="deriver",
    )
