"""Queries the context service answers, and its replies (deterministic reads, no model).

Each query type has its own subject kind (``mnemo.qry.<workspace>.<kind>``); the kinds are the
``KIND`` class variables below. Every representation read is keyed by (observer, observed).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemo_schema.ids import EntityId
from mnemo_schema.observations import Level
from mnemo_schema.text import JsonObject, QueryText, ReadJson

MAX_SESSIONS = 1000
# A set of sessions a read is confined to: their messages, and the observations that rest on
# them alone (through provenance). None: no confinement; empty: nothing (fail closed).
Sessions = Annotated[list[EntityId] | None, Field(default=None, max_length=MAX_SESSIONS)]


def allowed_sessions(
    session_id: str | None, sessions: Iterable[str] | None
) -> frozenset[str] | None:
    """The sessions a read may see: one session, an allowlist, both (their intersection)."""
    if session_id is None:
        return None if sessions is None else frozenset(sessions)
    return frozenset({session_id}) if sessions is None else frozenset({session_id} & set(sessions))


MAX_CONTEXT_TOKENS = 100_000
# A prompt-sized default: the caller asks for more when its model has room.
DEFAULT_CONTEXT_TOKENS = 8_192
DEFAULT_MAX_CONCLUSIONS = 25


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RepresentationSlice(_Query):
    """Which observations of a representation to render: a semantic slice or the newest ones."""

    search_query: QueryText | None = Field(default=None, min_length=1, max_length=10_000)
    search_top_k: int | None = Field(default=None, ge=1, le=100)
    search_max_distance: float | None = Field(default=None, ge=0.0, le=1.0)
    include_most_frequent: bool = False
    max_conclusions: int = Field(default=DEFAULT_MAX_CONCLUSIONS, ge=1, le=100)
    # Only observations formed in this session, when given (and in these sessions).
    session_id: EntityId | None = None
    sessions: Sessions = None


class ContextQuery(_Query):
    """get_context of one session, packed to ``tokens``."""

    KIND: ClassVar[str] = "context"
    session_id: EntityId
    tokens: int = Field(default=DEFAULT_CONTEXT_TOKENS, ge=0, le=MAX_CONTEXT_TOKENS)
    summary: bool = True
    peer_target: EntityId | None = None
    peer_perspective: EntityId | None = None
    limit_to_session: bool = False
    slice: RepresentationSlice = RepresentationSlice()
    # The card is left out when the caller's configuration says not to use it, or when the
    # read is confined to sessions (a card's entries carry no provenance to confine).
    use_card: bool = True

    @model_validator(mode="after")
    def _perspective_needs_target(self) -> ContextQuery:
        if self.peer_perspective is not None and self.peer_target is None:
            raise ValueError("peer_perspective needs peer_target")
        return self

    @property
    def observer(self) -> str | None:
        """Whose model is read: the perspective, else the target's own."""
        return self.peer_perspective or self.peer_target


class RepresentationQuery(_Query):
    """What ``observer`` believes about ``observed``, rendered as markdown (and its card)."""

    KIND: ClassVar[str] = "representation"
    observer: EntityId
    observed: EntityId
    slice: RepresentationSlice = RepresentationSlice()
    with_card: bool = False


class SearchQuery(_Query):
    """Hybrid message search inside a workspace, narrowed to a session and / or a peer."""

    KIND: ClassVar[str] = "search"
    query: QueryText = Field(min_length=1, max_length=10_000)
    session_id: EntityId | None = None
    sessions: Sessions = None
    peer_id: EntityId | None = None
    filters: JsonObject | None = None
    limit: int = Field(default=10, ge=1, le=100)


class ObservationSearchQuery(_Query):
    """The observations of one (observer, observed) representation nearest ``query`` in meaning."""

    KIND: ClassVar[str] = "observation_search"
    observer: EntityId
    observed: EntityId
    query: QueryText = Field(min_length=1, max_length=10_000)
    top_k: int = Field(default=10, ge=1, le=100)
    max_distance: float | None = Field(default=None, ge=0.0, le=2.0)
    levels: list[Level] | None = None
    session_id: EntityId | None = None
    sessions: Sessions = None
    filters: JsonObject | None = None


class ObservationHit(BaseModel):
    id: str
    # Cosine distance to the query, when the vectors were compared (not for a hit by words only).
    distance: float | None = None


class ObservationSearchReply(BaseModel):
    """Nearest first."""

    hits: list[ObservationHit]


class ContextMessage(BaseModel):
    id: str
    content: str
    peer_id: str
    session_id: str
    workspace_id: str
    metadata: ReadJson
    created_at: datetime
    token_count: int


class ContextSummary(BaseModel):
    content: str
    message_id: str
    summary_type: str
    created_at: datetime
    token_count: int


class ContextReply(BaseModel):
    """The packed context: messages oldest-first, the chosen summary, the slice and card."""

    session_id: str
    messages: list[ContextMessage]
    summary: ContextSummary | None = None
    peer_representation: str | None = None
    peer_card: list[str] | None = None
    tokens: int = 0


class RepresentationReply(BaseModel):
    representation: str
    peer_card: list[str] | None = None


class SearchReply(BaseModel):
    messages: list[ContextMessage]
