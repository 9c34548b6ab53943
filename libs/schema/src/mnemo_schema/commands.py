"""Commands to ingest (request-reply on ``mnemo.cmd.<workspace>``) and their replies.

The gateway sends these; an agent may send them too, with nothing but this module or the published
JSON Schema. A command is a request that may be refused; the events it produces are the facts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from mnemo_schema.config import (
    MessageConfiguration,
    PeerConfig,
    SessionConfiguration,
    SessionPeerConfig,
    WorkspaceConfiguration,
)
from mnemo_schema.errors import Refusal
from mnemo_schema.files import UploadedFile
from mnemo_schema.ids import EntityId
from mnemo_schema.observations import MAX_CARD_ENTRIES, MAX_CARD_ENTRY_CHARS
from mnemo_schema.text import Metadata, StorableText, StorableTime

MAX_BATCH = 100
MAX_CONTENT_CHARS = 50_000


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    correlation_id: StorableText | None = Field(default=None, max_length=255)


class EnsureWorkspace(_Command):
    """Get or create a workspace."""

    kind: Literal["ensure_workspace"] = "ensure_workspace"
    metadata: Metadata | None = None
    configuration: WorkspaceConfiguration | None = None


class UpdateWorkspace(_Command):
    kind: Literal["update_workspace"] = "update_workspace"
    metadata: Metadata | None = None
    configuration: WorkspaceConfiguration | None = None


class DeleteWorkspace(_Command):
    kind: Literal["delete_workspace"] = "delete_workspace"


class EnsurePeer(_Command):
    """Get or create a peer."""

    kind: Literal["ensure_peer"] = "ensure_peer"
    peer_id: EntityId
    metadata: Metadata | None = None
    configuration: PeerConfig | None = None


class UpdatePeer(_Command):
    kind: Literal["update_peer"] = "update_peer"
    peer_id: EntityId
    metadata: Metadata | None = None
    configuration: PeerConfig | None = None


class EnsureSession(_Command):
    """Get or create a session, optionally with members."""

    kind: Literal["ensure_session"] = "ensure_session"
    session_id: EntityId
    metadata: Metadata | None = None
    configuration: SessionConfiguration | None = None
    peers: dict[EntityId, SessionPeerConfig] | None = None


class UpdateSession(_Command):
    kind: Literal["update_session"] = "update_session"
    session_id: EntityId
    metadata: Metadata | None = None
    configuration: SessionConfiguration | None = None


class DeleteSession(_Command):
    kind: Literal["delete_session"] = "delete_session"
    session_id: EntityId


class AddSessionPeers(_Command):
    """Add members (creating peers as needed); ``replace`` makes the list the whole membership."""

    kind: Literal["add_session_peers"] = "add_session_peers"
    session_id: EntityId
    peers: dict[EntityId, SessionPeerConfig]
    replace: bool = False


class RemoveSessionPeers(_Command):
    kind: Literal["remove_session_peers"] = "remove_session_peers"
    session_id: EntityId
    peer_ids: list[EntityId]


class ConfigureSessionPeer(_Command):
    kind: Literal["configure_session_peer"] = "configure_session_peer"
    session_id: EntityId
    peer_id: EntityId
    observe_me: bool | None = None
    observe_others: bool | None = None


class NewMessage(BaseModel):
    """One message of a batch."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    peer_id: EntityId
    content: StorableText = Field(max_length=MAX_CONTENT_CHARS)
    metadata: Metadata | None = None
    configuration: MessageConfiguration | None = None
    created_at: StorableTime | None = None


class PostMessages(_Command):
    """Append 1..100 messages to a session, all or nothing.

    With an ``idempotency_key`` the message and event ids are derived from it, so a retried batch
    is de-duplicated by JetStream and by the projections instead of being stored twice.
    """

    kind: Literal["post_messages"] = "post_messages"
    session_id: EntityId
    messages: list[NewMessage] = Field(min_length=1, max_length=MAX_BATCH)
    idempotency_key: StorableText | None = Field(default=None, max_length=255)
    file: UploadedFile | None = None
    """The uploaded file whose text the messages hold, in order, if they came from one."""


class CloneSession(_Command):
    """Copy a session (whole, or up to and including ``message_id``) into a new one.

    The copy has the source's metadata, configuration and members; its messages keep their
    senders, content, metadata and times, get new ids, and feed no representation: what they
    say is already in the memory formed from the originals.
    """

    kind: Literal["clone_session"] = "clone_session"
    session_id: EntityId
    clone_id: EntityId | None = None
    """The new session's id; one is generated when absent."""
    message_id: EntityId | None = None


class UpdateMessageMetadata(_Command):
    kind: Literal["update_message_metadata"] = "update_message_metadata"
    session_id: EntityId
    message_id: EntityId
    metadata: Metadata


class NewConclusion(BaseModel):
    """A fact an API caller states directly about a peer, from an observer's point of view."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: StorableText = Field(min_length=1, max_length=65_535)
    observer_id: EntityId
    observed_id: EntityId
    session_id: EntityId | None = None


class CreateConclusions(_Command):
    kind: Literal["create_conclusions"] = "create_conclusions"
    conclusions: list[NewConclusion] = Field(min_length=1, max_length=MAX_BATCH)


class DeleteConclusion(_Command):
    """Remove a conclusion from its representation (the log keeps it, with the reason)."""

    kind: Literal["delete_conclusion"] = "delete_conclusion"
    conclusion_id: EntityId
    observer_id: EntityId
    observed_id: EntityId
    reason: StorableText = Field(default="deleted through the API", min_length=1, max_length=2_000)


class SetPeerCard(_Command):
    """Replace the peer card of the (observer_id, observed_id) representation."""

    kind: Literal["set_peer_card"] = "set_peer_card"
    observer_id: EntityId
    observed_id: EntityId
    card: list[Annotated[StorableText, Field(min_length=1, max_length=MAX_CARD_ENTRY_CHARS)]] = (
        Field(max_length=MAX_CARD_ENTRIES)
    )


Command = Annotated[
    EnsureWorkspace
    | UpdateWorkspace
    | DeleteWorkspace
    | EnsurePeer
    | UpdatePeer
    | EnsureSession
    | UpdateSession
    | DeleteSession
    | AddSessionPeers
    | RemoveSessionPeers
    | ConfigureSessionPeer
    | PostMessages
    | CloneSession
    | UpdateMessageMetadata
    | CreateConclusions
    | DeleteConclusion
    | SetPeerCard,
    Field(discriminator="kind"),
]

COMMAND_ADAPTER: TypeAdapter[Command] = TypeAdapter(Command)
# The discriminator values, which pydantic puts in the location of a command's errors.
COMMAND_KINDS: frozenset[str] = frozenset(
    m.model_fields["kind"].default for m in get_args(get_args(Command)[0])
)


class CommandError(BaseModel):
    """Why a command was refused; ``status`` is the HTTP status the gateway answers with."""

    status: int
    detail: str
    field: str | None = None


class CommandReply(BaseModel):
    """Ingest's answer: the events appended, and the stream position a reader must wait for."""

    ok: bool
    error: CommandError | None = None
    # Highest stream sequence that touched this workspace's write model when the command was
    # handled; a read-your-writes reader waits until the projections have applied it.
    watermark: int = 0
    event_ids: list[str] = Field(default_factory=list)
    message_ids: list[str] = Field(default_factory=list)
    # For post_messages: each message's token count, and the time given to messages that came
    # without one, so the caller can answer without reading the messages back.
    token_counts: list[int] = Field(default_factory=list)
    posted_at: datetime | None = None
    observation_ids: list[str] = Field(default_factory=list)
    created: bool = False
    # For clone_session: the new session's id.
    session_id: str | None = None

    @classmethod
    def refused(cls, refusal: Refusal) -> CommandReply:
        """The reply that carries ``refusal``."""
        return cls(ok=False, error=CommandError.model_validate(refusal.as_dict()))

    def refusal(self) -> Refusal | None:
        """The refusal this reply carries, if any."""
        e = self.error
        return None if e is None else Refusal(e.status, e.detail, e.field)
