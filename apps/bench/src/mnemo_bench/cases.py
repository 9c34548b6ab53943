"""What every benchmark is read into: cases of dated sessions, and questions about them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Turn:
    """One message; ``id`` is the dataset's own message id (LoCoMo dia_id, BEAM chat id)."""

    id: str
    speaker: str
    text: str
    at: datetime | None = None


@dataclass(frozen=True)
class Session:
    """A dated conversation session."""

    id: str
    at: datetime | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """A question with its reference answer and the ids of the turns that hold the evidence.

    ``category`` is the dataset's question type as a string (LoCoMo's ids are "1".."5").
    ``rubric`` carries BEAM's nuggets; ``ordering`` the expected event order when one is scored.
    """

    id: str
    text: str
    answer: str
    category: str
    evidence: tuple[str, ...] = ()
    rubric: tuple[str, ...] = ()
    ordering: tuple[str, ...] = ()
    asked_at: datetime | None = None
    abstention: bool = False


@dataclass(frozen=True)
class Case:
    """One conversation (one Mnemo workspace) and the questions asked about it."""

    id: str
    speakers: tuple[str, ...]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = field(default=())

    def turns(self) -> list[Turn]:
        """Every turn, session by session."""
        return [t for s in self.sessions for t in s.turns]
