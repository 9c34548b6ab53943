"""Session summaries: short and long, each covering the session up to one message."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mnemo_schema import subjects
from mnemo_schema.envelope import Envelope
from mnemo_schema.ids import EntityId
from mnemo_schema.text import StorableText

SummaryType = Literal["short", "long"]


class SummaryUpdated(Envelope):
    """A new short or long summary of a session; earlier ones stay in the history."""

    type: Literal["SummaryUpdated"] = "SummaryUpdated"
    session_id: EntityId
    summary_type: SummaryType
    content: StorableText = Field(min_length=1)
    # The newest message the summary covers, and its stream position.
    message_id: str
    message_seq: int = Field(ge=0)
    messages_covered: int = Field(ge=0)
    token_count: int = Field(ge=0)

    def subject(self) -> str:
        return subjects.summary_subject(self.workspace, self.session_id)


class SummariesErased(Envelope):
    """Summaries of a session were erased with what they covered: nothing of them is kept, in
    the projections or the log.

    The eraser publishes it for the summaries an erasure (of a message, session, peer or
    workspace) reaches, and for a summary of an erased message that lands after the erasure.
    ``summary_seqs``: the stream positions their ``SummaryUpdated`` events had.
    """

    type: Literal["SummariesErased"] = "SummariesErased"
    session_id: EntityId
    summary_seqs: list[int] = Field(default_factory=list)

    def subject(self) -> str:
        return subjects.summary_subject(self.workspace, self.session_id)
