"""The raw corpus: conversations in JSONL, one a line; lines that are not one are counted.

A line is ``{"id": str, "domain": str?, "target": str?, "messages": [{"speaker": str, "text": str,
"time": ISO 8601?}, ...]}``. Without ``target`` every speaker is a target in turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo_bench.cases import Case, Session, Turn
from mnemo_runtime.models.structured import describe_validation_error


class CorpusMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    speaker: str = Field(min_length=1, max_length=100)
    text: str
    time: datetime | None = None


class Conversation(BaseModel):
    """One conversation of the corpus."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=200)
    domain: str = "general"
    target: str | None = None
    messages: list[CorpusMessage] = Field(min_length=1)

    def text(self) -> str:
        """Every message's text, one a line."""
        return "\n".join(m.text for m in self.messages)

    def speakers(self) -> list[str]:
        return list(dict.fromkeys(m.speaker for m in self.messages))

    def targets(self) -> list[str]:
        """The speakers to derive observations about."""
        return [self.target] if self.target else self.speakers()

    def as_case(self) -> Case:
        """The conversation as one dated session, as the deriver's benchmark reads them."""
        start = next((m.time for m in self.messages if m.time), None) or datetime(
            2024, 1, 1, tzinfo=UTC
        )
        turns = tuple(
            Turn(str(i), m.speaker, m.text, m.time or start + timedelta(minutes=i))
            for i, m in enumerate(self.messages)
        )
        return Case(self.id, tuple(self.speakers()), (Session("session", start, turns),))


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str


def read_corpus(path: Path) -> Iterator[Conversation | BadLine]:
    """Each line as a conversation, or why it is not one (never an exception)."""
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                yield Conversation.model_validate(json.loads(raw))
            except json.JSONDecodeError as err:
                yield BadLine(n, f"not JSON: {err.msg}")
            except ValidationError as err:
                yield BadLine(n, describe_validation_error(err))
