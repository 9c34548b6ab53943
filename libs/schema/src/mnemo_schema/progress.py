"""How far the stages have come, for the queue status.

Two events on the log (``mnemo.evt.<workspace>.work...``), which the entity projection keeps
for the gateway's queue status (``work_lines``, ``work_sessions``): what the deriver has taken
and done in each representation's line, and what the summarizer has counted of each session.
Both carry positions only, never content; each says "at least this far", so applying one twice,
or an older one after a newer, changes nothing.

And the progress note a stage sends on ``mnemo.progress.<workspace>`` (core NATS) when work of
the workspace starts or ends: the sessions it was in. Whoever watches queues drain (the gateway's
``queue.empty``) reads it; the note only says where to look, the queue status says the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from mnemo_schema import subjects
from mnemo_schema.envelope import Envelope
from mnemo_schema.ids import EntityId


class DerivationProgressed(Envelope):
    """The deriver's line of one representation: its messages up to ``taken_seq`` are being
    derived, those up to ``done_seq`` are done (derived, or parked as a dead letter), and its
    newest observation is at ``observation_seq`` (0: none said here)."""

    type: Literal["DerivationProgressed"] = "DerivationProgressed"
    observer: EntityId
    observed: EntityId
    taken_seq: int = Field(default=0, ge=0)
    done_seq: int = Field(default=0, ge=0)
    observation_seq: int = Field(default=0, ge=0)

    def subject(self) -> str:
        return subjects.derivation_work_subject(self.workspace, self.observer, self.observed)


class SummarizationProgressed(Envelope):
    """The summarizer has counted every message of the session up to ``done_seq`` (and written
    or parked any summary due at them); its newest summary is at ``summary_seq`` (0: none)."""

    type: Literal["SummarizationProgressed"] = "SummarizationProgressed"
    session_id: EntityId
    done_seq: int = Field(ge=0)
    summary_seq: int = Field(default=0, ge=0)

    def subject(self) -> str:
        return subjects.summary_work_subject(self.workspace, self.session_id)


Line = tuple[int, int, int]  # taken, done, newest observation


def lines_of(events: Iterable[object]) -> dict[tuple[str, str, str], Line]:
    """How far each (workspace, observer, observed) line is, by the ``DerivationProgressed``
    among ``events`` in any order: the greatest of each position. What the entity projection
    keeps (``work_lines``)."""
    out: dict[tuple[str, str, str], Line] = {}
    for e in events:
        if isinstance(e, DerivationProgressed):
            key = (e.workspace, e.observer, e.observed)
            taken, done, seen = out.get(key, (0, 0, 0))
            out[key] = (
                max(taken, e.taken_seq),
                max(done, e.done_seq),
                max(seen, e.observation_seq),
            )
    return out


def sessions_of(events: Iterable[object]) -> dict[tuple[str, str], tuple[int, int]]:
    """How far the summarizer has counted each (workspace, session), by the
    ``SummarizationProgressed`` among ``events``: the greatest of each position. What the entity
    projection keeps (``work_sessions``)."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for e in events:
        if isinstance(e, SummarizationProgressed):
            key = (e.workspace, e.session_id)
            done, summary = out.get(key, (0, 0))
            out[key] = (max(done, e.done_seq), max(summary, e.summary_seq))
    return out


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
