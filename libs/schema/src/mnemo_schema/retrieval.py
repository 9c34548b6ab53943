"""The retrieval engine's query and reply: ranked messages and observations for a question.

The context service answers ``RetrievalQuery`` on ``mnemo.qry.<workspace>.retrieve``; the
dialectic and the dreamer ask it (over NATS, or directly when they share its process), and the
gateway's search, ``conclusions/query`` and get_context routes go through the same engine.

With ``observer`` and ``observed`` the query runs inside that representation: its observations,
and the messages that fed it. Without them it runs over the workspace's messages (narrowed by
``session_id`` / ``peer_id``) and the self-representations of the peers it concerns.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemo_schema.context_queries import ContextMessage, Sessions, allowed_sessions
from mnemo_schema.events import Representation
from mnemo_schema.observations import Level
from mnemo_schema.text import JsonObject, QueryText

Component = Literal["lexical", "dense", "facts", "names", "time", "recency", "rerank"]
"""The engine's parts, each of which a query may switch off (to measure what it earns):

- ``lexical``: BM25 over message passages and observations;
- ``dense``: MiniLM vectors of message passages and observations;
- ``facts``: fact-augmented keys: an observation's hit lifts the messages it came from, and a
  message's hit lifts the observations derived from it;
- ``names``: peers named in the question, whose messages and observations count for more;
- ``time``: time expressions of the question, resolved to a window that evidence from inside
  it counts for more;
- ``recency``: questions about the current value (now, currently, latest) prefer newer evidence;
- ``rerank``: the deployment's reranker, when one is configured (none offline).
"""
COMPONENTS: tuple[Component, ...] = get_args(Component)
MAX_RESULTS = 100


class RetrievalQuery(BaseModel):
    """Rank a workspace's (or one representation's) messages and observations for ``query``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str] = "retrieve"

    query: QueryText = Field(min_length=1, max_length=10_000)
    observer: str | None = Field(default=None, min_length=1)
    observed: str | None = Field(default=None, min_length=1)
    session_id: str | None = None
    sessions: Sessions = None
    """Only these sessions' messages, and observations resting on them alone (with
    ``session_id``: both hold)."""
    peer_id: str | None = None
    message_filters: JsonObject | None = None
    """The filter language over messages (``mnemo_schema.filters.MESSAGE_FIELDS``)."""
    observation_filters: JsonObject | None = None
    """The filter language over observations (``CONCLUSION_FIELDS``)."""
    messages: int = Field(default=10, ge=0, le=MAX_RESULTS)
    """How many messages to return, best first."""
    observations: int = Field(default=0, ge=0, le=MAX_RESULTS)
    """How many observations to return, best first."""
    levels: list[Level] | None = None
    max_distance: float | None = Field(default=None, ge=0.0, le=2.0)
    """Observations farther than this cosine distance from the query are left out."""
    diverse: bool = False
    """Observations resting on messages that better-ranked ones already cite count for less:
    a slice packed into a token budget wants many sources rather than many readings of one."""
    now: datetime | None = None
    """What relative time expressions ("last week") count from; else the newest evidence."""
    without: frozenset[Component] = frozenset()

    @model_validator(mode="after")
    def _both_or_neither(self) -> RetrievalQuery:
        if (self.observer is None) != (self.observed is None):
            raise ValueError("observer and observed go together: a representation has both")
        return self

    @property
    def allowed(self) -> frozenset[str] | None:
        """The sessions the query may read from (None: all)."""
        return allowed_sessions(self.session_id, self.sessions)

    @property
    def in_representation(self) -> bool:
        """Whether the query is scoped to one (observer, observed) representation."""
        return self.observer is not None


class RankedMessage(BaseModel):
    """A message the engine found, with where in it, and the turn it answered."""

    message: ContextMessage
    score: float
    passage: tuple[int, int] | None = None
    """Character span of the best-scoring passage (long messages are searched by passage)."""
    previous: ContextMessage | None = None
    """The preceding turn of another speaker in the same session, as context."""
    found_by: list[str] = Field(default_factory=list)


class ObservationFields(BaseModel):
    """An observation as its readers see it, and the messages it rests on."""

    id: str
    level: Level
    content: str
    observer: str
    observed: str
    session_id: str | None = None
    created_at: datetime
    observed_at: datetime | None = None
    premise_ids: list[str] = Field(default_factory=list)
    source_message_ids: list[str] = Field(default_factory=list)
    times_derived: int = 1
    token_count: int | None = None


class RankedObservation(ObservationFields):
    """An observation the engine found."""

    score: float
    distance: float | None = None
    """Cosine distance to the query, when the vectors were compared."""
    found_by: list[str] = Field(default_factory=list)


class RetrievalReply(BaseModel):
    """Best first."""

    messages: list[RankedMessage] = Field(default_factory=list)
    observations: list[RankedObservation] = Field(default_factory=list)


# Ids one ``StoredQuery`` may name, and the newest observations it may ask for.
MAX_STORED_IDS = 1_000
MAX_NEWEST = 1_000


class StoredQuery(BaseModel):
    """Live observations as the memory projection stored them, read by key (no ranking): by id,
    an alias resolved to the observation it was merged into, in the order asked; or the newest
    of one representation. Answered by the context service on ``mnemo.qry.<workspace>.stored``.

    With ``observer`` and ``observed`` only that representation's observations are found; an id
    of another representation is not."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str] = "stored"

    observer: str | None = Field(default=None, min_length=1)
    observed: str | None = Field(default=None, min_length=1)
    ids: list[str] | None = Field(default=None, max_length=MAX_STORED_IDS)
    newest: int = Field(default=0, ge=0, le=MAX_NEWEST)
    """How many of the representation's newest observations (instead of ``ids``)."""
    levels: list[Level] | None = None
    sessions: Sessions = None
    """Only observations resting on these sessions alone."""

    @model_validator(mode="after")
    def _one_way(self) -> StoredQuery:
        if (self.observer is None) != (self.observed is None):
            raise ValueError("observer and observed go together: a representation has both")
        if (self.ids is None) == (self.newest == 0):
            raise ValueError("ask by ids or for the newest, one of the two")
        if self.newest and self.observer is None:
            raise ValueError("the newest observations are a representation's: name it")
        return self


class StoredObservation(ObservationFields):
    """An observation with every field its readers weigh."""

    source_sessions: list[str] = Field(default_factory=list)
    needs_review: bool = False
    confidence: float | None = None
    pattern_type: str | None = None


class StoredReply(BaseModel):
    observations: list[StoredObservation] = Field(default_factory=list)
    """In the order asked (an id once for each time it was asked), or newest first."""
    resolved: dict[str, str] = Field(default_factory=dict)
    """Each id asked that names a live observation found -> that observation's id (itself, or
    for an alias the observation it was merged into)."""


# Messages one ``MessagesQuery`` may return, and the messages either side of ``around``.
MAX_MESSAGES = 1_000
MAX_WINDOW = 100


class MessagesQuery(BaseModel):
    """Messages read by key (no ranking), oldest first: those that fed one representation (with
    ``observer`` and ``observed``) or any of the workspace's, within ``sessions`` when given.
    One way of asking: by ``ids``; ``containing`` a text (case-insensitive); created in
    [``created_from``, ``created_before``); or ``around`` a message, the ``window`` messages of
    its session either side of it (and itself, when it is visible). Answered by the context service on
    ``mnemo.qry.<workspace>.messages``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str] = "messages"

    observer: str | None = Field(default=None, min_length=1)
    observed: str | None = Field(default=None, min_length=1)
    sessions: Sessions = None
    ids: list[str] | None = Field(default=None, max_length=MAX_MESSAGES)
    containing: str | None = Field(default=None, min_length=1, max_length=10_000)
    created_from: datetime | None = None
    created_before: datetime | None = None
    around: str | None = Field(default=None, min_length=1)
    window: int = Field(default=0, ge=0, le=MAX_WINDOW)
    limit: int = Field(default=MAX_MESSAGES, ge=1, le=MAX_MESSAGES)
    """At most this many (``ids`` and ``around`` are bounded by what they name)."""

    @model_validator(mode="after")
    def _one_way(self) -> MessagesQuery:
        if (self.observer is None) != (self.observed is None):
            raise ValueError("observer and observed go together: a representation has both")
        ranged = self.created_from is not None or self.created_before is not None
        if ranged and (self.created_from is None or self.created_before is None):
            raise ValueError("a time range has both created_from and created_before")
        ways = (self.ids is not None, self.containing is not None, ranged, self.around is not None)
        if sum(ways) != 1:
            raise ValueError("ask by ids, containing, a time range or around: one of them")
        return self


class StoredMessage(BaseModel):
    id: str
    session_id: str
    peer_id: str
    content: str
    created_at: datetime
    seq: int
    """The message's position in the workspace's log (ordering, not counting: it is shared
    with the other sessions)."""
    representations: list[Representation] = Field(default_factory=list)
    """The (observer, observed) representations it fed."""


class MessagesReply(BaseModel):
    messages: list[StoredMessage] = Field(default_factory=list)
    """Oldest first."""
