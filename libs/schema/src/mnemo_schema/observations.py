"""Memory events: observations written into, and deleted from, one (observer, observed) model."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from mnemo_schema import subjects
from mnemo_schema.envelope import Envelope
from mnemo_schema.ids import EntityId
from mnemo_schema.text import StorableText

Level = Literal["explicit", "deductive", "inductive", "contradiction"]
Origin = Literal["deriver", "dreamer", "api"]
DERIVED_LEVELS: frozenset[str] = frozenset({"deductive", "inductive", "contradiction"})


class ObservationWritten(Envelope):
    """A belief entered a representation.

    Explicit observations cite their source message and a verbatim span of it (except those an
    API caller states directly, ``origin="api"``); derived ones cite the observations they rest on
    (``premise_ids``), which must exist in the same representation.
    """

    type: Literal["ObservationWritten"] = "ObservationWritten"
    observation_id: str
    observer: EntityId
    observed: EntityId
    session_id: EntityId | None = None
    level: Level = "explicit"
    content: StorableText = Field(min_length=1, max_length=65_535)
    source_message_ids: list[str] = Field(default_factory=list)
    # The stream positions of the cited messages, in the same order: the store reads each one
    # from the log to check the citation (events of earlier versions may lack them).
    source_message_seqs: list[int] = Field(default_factory=list)
    source_span: StorableText | None = None
    premise_ids: list[str] = Field(default_factory=list)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    pattern_type: StorableText | None = None
    # When the fact was stated (the source message's time), as opposed to when it was derived.
    observed_at: datetime | None = None
    origin: Origin = "deriver"
    # On the last observation of a deriver's batch: the representation's messages up to this
    # stream position are derived, and formed once this event is applied (the batch's other
    # observations precede it in the log). The queue status counts them completed from then.
    formed_through: int | None = Field(default=None, ge=1)
    # Formed as a backlog's work (the deriver's batch was a background step): nobody waits on
    # it as it comes, and the projections apply it after the conversations'. It orders work
    # only; what a projection stores does not depend on it.
    backlog: bool = False

    def subject(self) -> str:
        return subjects.observation_subject(self.workspace, self.observer, self.observed)


class ObservationDeleted(Envelope):
    """A belief left a representation (superseded, pruned or deleted by a caller).

    The log keeps the observation; projections and retrieval drop it.
    """

    type: Literal["ObservationDeleted"] = "ObservationDeleted"
    observation_id: str
    observer: EntityId
    observed: EntityId
    reason: StorableText = Field(min_length=1, max_length=2_000)

    def subject(self) -> str:
        return subjects.observation_subject(self.workspace, self.observer, self.observed)


class ObservationsErased(Envelope):
    """Observations were erased from a representation, with everything they made: unlike
    ``ObservationDeleted`` nothing of them is kept, in the projections or the log.

    The eraser publishes it for what an erasure (of a message, session, peer or workspace)
    reaches through provenance. ``card``: the representation's card goes too (it may have been
    drawn from them). ``whole``: the representation itself went, with its peer or its workspace,
    and nothing of it is kept anywhere (its dream schedule included).
    """

    type: Literal["ObservationsErased"] = "ObservationsErased"
    observer: EntityId
    observed: EntityId
    observation_ids: list[str] = Field(default_factory=list)
    card: bool = False
    whole: bool = False

    def subject(self) -> str:
        return subjects.observation_subject(self.workspace, self.observer, self.observed)


MAX_CARD_ENTRIES = 40
MAX_CARD_ENTRY_CHARS = 500


class PeerCardUpdated(Envelope):
    """The peer card of a representation was replaced: the compact, stable facts about a peer."""

    type: Literal["PeerCardUpdated"] = "PeerCardUpdated"
    observer: EntityId
    observed: EntityId
    card: list[Annotated[StorableText, Field(min_length=1, max_length=MAX_CARD_ENTRY_CHARS)]] = (
        Field(max_length=MAX_CARD_ENTRIES)
    )
    origin: Origin = "api"

    def subject(self) -> str:
        return subjects.observation_subject(self.workspace, self.observer, self.observed)
