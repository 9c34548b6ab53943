"""Which received events someone may wait on, told from their stored subjects."""

from __future__ import annotations

from mnemo_projector.intake import _awaitable
from mnemo_schema import subjects


def _stored(published: str, partition: int = 3) -> str:
    """The subject as the stream stores it: the partition after the workspace."""
    parts = published.split(".")
    parts.insert(3, str(partition))
    return ".".join(parts)


def test_observations_and_messages_are_awaitable_summaries_and_entities_not():
    assert _awaitable(_stored(subjects.observation_subject("w", "obs", "msg")))
    assert _awaitable(_stored(subjects.message_subject("w", "s")))
    assert not _awaitable(_stored(subjects.summary_subject("w", "obs")))
    assert not _awaitable(_stored(subjects.entity_subject("w", "session")))
    assert not _awaitable("mnemo.evt.w")
