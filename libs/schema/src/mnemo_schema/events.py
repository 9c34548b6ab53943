"""Events: immutable, past-tense, versioned facts. Their JetStream log is the system of record.

Add fields only as optional; a change of meaning is a new event type.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from mnemo_schema import subjects
from mnemo_schema.config import PeerConfig, SessionConfiguration, WorkspaceConfiguration
from mnemo_schema.dreams import DreamCompleted, DreamDue, DreamsErased
from mnemo_schema.envelope import Envelope as Envelope
from mnemo_schema.files import FileChunk
from mnemo_schema.ids import EntityId, Metadata
from mnemo_schema.keys import KeyRevoked
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationsErased,
    ObservationWritten,
    PeerCardUpdated,
)
from mnemo_schema.progress import DerivationProgressed, SummarizationProgressed
from mnemo_schema.summaries import SummariesErased, SummaryUpdated
from mnemo_schema.text import StorableText, StorableTime, StoredJson
from mnemo_schema.webhooks import WebhookEndpointDeleted, WebhookEndpointRegistered


class WorkspaceCreated(Envelope):
    type: Literal["WorkspaceCreated"] = "WorkspaceCreated"
    metadata: Metadata
    configuration: WorkspaceConfiguration = WorkspaceConfiguration()


class WorkspaceUpdated(Envelope):
    type: Literal["WorkspaceUpdated"] = "WorkspaceUpdated"
    metadata: StoredJson | None = None
    configuration: WorkspaceConfiguration | None = None


class WorkspaceDeleted(Envelope):
    """A workspace and everything in it were erased: every projection retracts it, and the log
    keeps nothing of it but this event (see the projector's eraser)."""

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
    """A session was erased: its messages, what was derived from them, its summaries."""

    type: Literal["SessionDeleted"] = "SessionDeleted"
    session_id: EntityId

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "session")


class PeerDeleted(Envelope):
    """A peer was erased: its messages, its memberships, every representation of or by it."""

    type: Literal["PeerDeleted"] = "PeerDeleted"
    peer_id: EntityId

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "peer")


class MessageDeleted(Envelope):
    """A message was erased, with the summaries covering it and what was derived from it."""

    type: Literal["MessageDeleted"] = "MessageDeleted"
    session_id: EntityId
    message_id: str

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "message")


DELETIONS = ("WorkspaceDeleted", "SessionDeleted", "PeerDeleted", "MessageDeleted")


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


class ScopeCreated(Envelope):
    """A scope came to be: a named set of sessions that recall can be confined to."""

    type: Literal["ScopeCreated"] = "ScopeCreated"
    scope_id: EntityId
    metadata: Metadata

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "scope")


class ScopeSessionsAdded(Envelope):
    type: Literal["ScopeSessionsAdded"] = "ScopeSessionsAdded"
    scope_id: EntityId
    session_ids: list[EntityId]

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "scope")


class ScopeSessionRemoved(Envelope):
    type: Literal["ScopeSessionRemoved"] = "ScopeSessionRemoved"
    scope_id: EntityId
    session_id: EntityId

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "scope")


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
    # The configuration in force when it was posted (workspace, session and message levels, as
    # ingest resolved them): whether memory is formed from it, and the application's
    # instructions for the deriver.
    reasoning: bool = True
    instructions: StorableText | None = None
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
    | PeerDeleted
    | MessageDeleted
    | PeerJoinedSession
    | PeerLeftSession
    | SessionPeerConfigured
    | ScopeCreated
    | ScopeSessionsAdded
    | ScopeSessionRemoved
    | MessagePosted
    | MessageMetadataUpdated
    | ObservationWritten
    | ObservationDeleted
    | ObservationsErased
    | PeerCardUpdated
    | SummaryUpdated
    | SummariesErased
    | DreamDue
    | DreamCompleted
    | DreamsErased
    | DerivationProgressed
    | SummarizationProgressed
    | KeyRevoked
    | WebhookEndpointRegistered
    | WebhookEndpointDeleted,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def decode_event(data: bytes) -> Event:
    """Parse one event from its JSON bytes."""
    return EVENT_ADAPTER.validate_json(data)


def encode_event(event: Envelope | KeyRevoked) -> bytes:
    """Serialise one event to JSON bytes."""
    return event.model_dump_json().encode()
