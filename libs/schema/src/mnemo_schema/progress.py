"""The progress note a stage sends on ``mnemo.progress.<workspace>`` (core NATS) when work of the
workspace starts or ends: the sessions it was in. Whoever watches queues drain (the gateway's
``queue.empty``) reads it; the note only says where to look, the queue status says the rest."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field, ValidationError


class ProgressNote(BaseModel):
    """The sessions of the workspace the work was in (none: the workspace's own work)."""

    sessions: list[str] = Field(default_factory=list)


def encode_note(sessions: Iterable[str]) -> bytes:
    """The note for work in ``sessions``."""
    return ProgressNote(sessions=sorted(set(sessions))).model_dump_json().encode()


def decode_note(data: bytes | None) -> list[str]:
    """The sessions a note names; none if it cannot be read (it is only a hint)."""
    try:
        return ProgressNote.model_validate_json(data or b"{}").sessions
    except ValidationError:
        return []
