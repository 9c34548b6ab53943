"""Events: immutable, past-tense, versioned facts. Their JetStream log is the system of record.

Add fields only as optional; a change of meaning is a new event type.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from mnemo_schema import subjects
from mnemo_schema.config import PeerConfig, SessionConfiguration, WorkspaceConfiguration
from mnemo_schema.dreams import DreamCompleted, DreamDue
from mnemo_schema.envelope import Envelope as Envelope
from mnemo_schema.files import FileChunk
from mnemo_schema.ids import EntityId, Metadata
from mnemo_schema.observations import ObservationDeleted, ObservationWritten, PeerCardUpdated
from mnemo_schema.summaries import SummaryUpdated
from mnemo_schema.text import StorableText, StorableTime, StoredJson


class WorkspaceCreated(Envelope):
    type: Literal["WorkspaceCreated"] = "WorkspaceCreated"
    metadata: Metadata
    configuration: WorkspaceConfiguration = WorkspaceConfiguration()


class WorkspaceUpdated(Envelope):
    type: Literal["WorkspaceUpdated"] = "WorkspaceUpdated"
    metadata: StoredJson | None = None
    configuration: WorkspaceConfiguration | None = None


class WorkspaceDeleted(Envelope):
    type: Literal["WorkspaceDeleted"] = "WorkspaceDeleted"


class PeerCreated(Envelope):
    type: Literal["PeerCreated"] = "PeerCreated"
    peer_id: EntityId
    metadata: Metadata
    configuration: PeerConfig = PeerConfig()

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "peer")


class PeerUpdated(Envelope):
    type: Literal["PeerUpdated"] = "PeerUpdated"
    peer_id: EntityId
    metadata: StoredJson | None = None
    configuration: PeerConfig | None = None

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "peer")


class SessionCreated(Envelope):
    type: Literal["SessionCreated"] = "SessionCreated"
    session_id: EntityId
    metadata: Metadata
    configuration: SessionConfiguration = SessionConfiguration()

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "session")


class SessionUpdated(Envelope):
    type: Literal["SessionUpdated"] = "SessionUpdated"
    session_id: EntityId
    metadata: StoredJson | None = None
    configuration: SessionConfiguration | None = None

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "session")


class SessionDeleted(Envelope):
    type: Literal["SessionDeleted"] = "SessionDeleted"
    session_id: EntityId

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "session")


class PeerJoinedSession(Envelope):
    """A peer became a member of a session, with its theory-of-mind switches at that moment."""

    type: Literal["PeerJoinedSession"] = "PeerJoinedSession"
    session_id: EntityId
    peer_id: EntityId
    observe_me: bool = True
    observe_others: bool = False

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "membership")


class PeerLeftSession(Envelope):
    type: Literal["PeerLeftSession"] = "PeerLeftSession"
    session_id: EntityId
    peer_id: EntityId

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "membership")


class SessionPeerConfigured(Envelope):
    """A member's observe_me / observe_others switches changed."""

    type: Literal["SessionPeerConfigured"] = "SessionPeerConfigured"
    session_id: EntityId
    peer_id: EntityId
    observe_me: bool
    observe_others: bool

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "membership")


class Representation(BaseModel):
    """An (observer, observed) pair: the key of one peer's model of another (or of itself)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    observer: EntityId
    observed: EntityId


class MessagePosted(Envelope):
    """A message was accepted into a session.

    ``representations`` lists the (observer, observed) pairs this message may feed, computed by
    ingest from membership and configuration at the moment it was posted; downstream services use
    it as given and never re-derive it.
    """

    type: Literal["MessagePosted"] = "MessagePosted"
    session_id: EntityId
    message_id: str
    peer_id: EntityId
    content: StorableText
    metadata: Metadata
    created_at: StorableTime
    token_count: int = Field(ge=0)
    representations: list[Representation] = Field(default_factory=list)
    cloned_from: str | None = None
    """The message this one copies, when its session is a clone."""
    file: FileChunk | None = None
    """The uploaded file this message is a part of, when it came from one."""

    def subject(self) -> str:
        return subjects.message_subject(self.workspace, self.session_id)


class MessageMetadataUpdated(Envelope):
    type: Literal["MessageMetadataUpdated"] = "MessageMetadataUpdated"
    session_id: EntityId
    message_id: str
    metadata: StoredJson

    def subject(self) -> str:
        return subjects.message_subject(self.workspace, self.session_id)


Event = Annotated[
    WorkspaceCreated
    | WorkspaceUpdated
    | WorkspaceDeleted
    | PeerCreated
    | PeerUpdated
    | SessionCreated
    | SessionUpdated
    | SessionDeleted
    | PeerJoinedSession
    | PeerLeftSession
    | SessionPeerConfigured
    | MessagePosted
    | MessageMetadataUpdated
    | ObservationWritten
    | ObservationDeleted
    | PeerCardUpdated
    | SummaryUpdated
    | DreamDue
    | DreamCompleted,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def decode_event(data: bytes) -> Event:
    """Parse one event from its JSON bytes."""
    return EVENT_ADAPTER.validate_json(data)


def encode_event(event: Envelope) -> bytes:
    """Serialise one event to JSON bytes."""
    return event.model_dump_json().encode()
