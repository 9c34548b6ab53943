"""What the context handlers need from the read models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from mnemo_context.domain import Observation
from mnemo_runtime.vectors.ports import Scope, VectorLike
from mnemo_schema.context_queries import ContextMessage, ContextSummary
from mnemo_schema.observations import Level
from mnemo_schema.retrieval import MessagesQuery, MessagesReply, StoredQuery, StoredReply


@dataclass(frozen=True)
class WindowPage:
    """The part of one page of a session's newest messages that fits a budget."""

    messages: list[ContextMessage]
    """Oldest first."""
    seqs: list[int]
    """The messages' seq, oldest first."""
    budget: int
    """The budget the page was read with."""
    first_seq: int | None
    """seq of the oldest message taken; None when none fits."""
    tokens: int
    """Tokens of the messages taken."""
    read: int
    """Messages the page held, taken or not: fewer than asked means the session ran out."""
    after_seq: int
    """The page's lower bound (exclusive), as resolved when it was read."""


@dataclass(frozen=True)
class StoredSummary:
    summary: ContextSummary
    message_seq: int  # the last message the summary covers


@dataclass(frozen=True)
class Opening:
    """What a context reads of its session before it knows its slice: the session's newest
    summaries, a page of its newest messages, and the target's card."""

    summaries: dict[str, StoredSummary]
    page: WindowPage
    card: list[str] | None


class Reads(Protocol):
    """Scoped reads of messages, summaries, observations and cards."""

    async def latest_summaries(self, ws: str, session_id: str) -> dict[str, StoredSummary]:
        """The newest summary of each type ('short', 'long') of a session."""
        ...

    async def window_page(
        self,
        ws: str,
        session_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int,
        budget: int,
    ) -> WindowPage:
        """Of the newest ``limit`` messages with after_seq < seq < before_seq, those taken newest
        first while their tokens add up to at most ``budget``; the first that does not fit
        stops the taking. One round trip: sizes are summed where they are stored.

        ``after_seq`` None: the oldest coverage among the session's newest summary of each
        type (0 without summaries), found in the same round trip."""
        ...

    async def card(self, ws: str, observer: str, observed: str) -> list[str] | None:
        """The card of (observer, observed), if any."""
        ...

    async def opening(
        self,
        ws: str,
        session_id: str,
        after_seq: int | None,
        limit: int,
        budget: int,
        *,
        summaries: bool,
        card: tuple[str, str] | None,
    ) -> Opening:
        """In one round trip: ``latest_summaries`` (if ``summaries``; else none),
        ``window_page(ws, session_id, after_seq, None, limit, budget)``, and the ``card`` of
        (observer, observed) if one is asked for (else None)."""
        ...

    async def newest_observations(
        self, ws: str, observer: str, observed: str, sessions: frozenset[str] | None, limit: int
    ) -> list[Observation]:
        """Live observations of the representation (resting on ``sessions`` alone, when
        given), newest first."""
        ...

    async def frequent_observations(
        self, ws: str, observer: str, observed: str, sessions: frozenset[str] | None, limit: int
    ) -> list[Observation]:
        """Live observations of the representation (resting on ``sessions`` alone, when
        given), most often derived first."""
        ...

    async def stored_messages(self, ws: str, q: MessagesQuery) -> MessagesReply:
        """Visible messages by key, as ``MessagesQuery`` says, oldest first."""
        ...

    async def stored(self, ws: str, q: StoredQuery) -> StoredReply:
        """Live observations by key, as ``StoredQuery`` says: by id (aliases resolved), in
        the order asked, or a representation's newest; within its representation, levels and
        sessions when given."""
        ...


Condition = tuple[str, dict[str, Any]]
"""A compiled filter: SQL over one table's alias (``m`` messages, ``o`` observations) and its
named parameters."""


@dataclass(frozen=True)
class Confinement:
    """What a read is confined to beyond its representation.

    ``sessions``: only these sessions' messages, and observations whose provenance rests on them
    alone (None: every session; empty: nothing). ``messages`` / ``observations``: a caller's
    filter over each.
    """

    sessions: frozenset[str] | None = None
    messages: Condition | None = None
    observations: Condition | None = None


OPEN = Confinement()


class PassageHit(NamedTuple):
    """A passage of a message that matched a query, with the score of the list that found it.

    A named tuple, as ``ObservationRow``: a read decodes a few hundred."""

    message_id: str
    passage: int
    score: float
    peer_id: str
    created_at: datetime
    start: int
    end: int
    parts: int = 1
    """How many passages its message has."""


class ObservationRow(NamedTuple):
    """A live observation and the messages it rests on (its premises' ones included).

    A named tuple: a read decodes a few hundred, and one is made in a third of the time a
    frozen dataclass takes (its fields are set one ``object.__setattr__`` at a time)."""

    id: str
    level: Level
    content: str
    observer: str
    observed: str
    session_id: str | None
    created_at: datetime
    observed_at: datetime | None
    premise_ids: tuple[str, ...]
    source_message_ids: tuple[str, ...]
    times_derived: int
    token_count: int | None

    @property
    def at(self) -> datetime:
        """When the fact was stated, as well as it is known."""
        return self.observed_at or self.created_at


@dataclass(frozen=True)
class PassageAsk:
    """A list of message passages: of ``senders`` (any when None), visible to ``observer``,
    within ``confine``; ``limit`` passages, cut where the next one would name a message beyond
    the ``distinct``-th (a long message's passages fill several places each)."""

    senders: Sequence[str] | None
    observer: str | None
    confine: Confinement
    limit: int
    distinct: int


@dataclass(frozen=True)
class ObservationAsk:
    """Live observations of ``scopes`` (of ``levels``, within ``confine``): a list ``limit``
    long if ``listed``; with ``cite``, the rows also take those citing the passages listed."""

    scopes: Sequence[Scope]
    levels: Sequence[Level] | None
    confine: Confinement
    limit: int
    cite: bool = False
    listed: bool = True


@dataclass(frozen=True)
class ListsAsk:
    """What one round trip of lists reads. ``observations`` also scopes the rows: without it,
    no rows are read."""

    passages: PassageAsk | None = None
    observations: ObservationAsk | None = None


@dataclass
class Lists:
    """One round trip's lists, best first, and the rows of the observations they point at."""

    passages: list[PassageHit] = field(default_factory=list)
    observations: list[tuple[str, float]] = field(default_factory=list)
    """(id, score): BM25, or cosine similarity for a vector list."""
    rows: list[ObservationRow] = field(default_factory=list)
    """The live observations inside the scopes among those listed and (``cite``) those citing a
    passage's message; by (created_at, id)."""
    cites: list[tuple[str, str]] = field(default_factory=list)
    """(message id, observation id) for each citation of a listed passage's message."""


class EvidenceReads(Protocol):
    """What the retrieval engine reads: ranked candidates from each index, then their rows."""

    async def peer_names(self, ws: str) -> dict[str, list[str]]:
        """Every peer of the workspace, with the names (besides its id) it goes by."""
        ...

    async def lexical(self, ws: str, query: str, ask: ListsAsk) -> Lists:
        """BM25 lists of passages and observations, and the rows they point at: one round trip."""
        ...

    async def dense(self, ws: str, vector: VectorLike, model: str, ask: ListsAsk) -> Lists:
        """Lists of the passages (embedded by ``model``) and, if ``searches_observations``, the
        observations nearest ``vector``, and the rows they point at: one round trip."""
        ...

    @property
    def searches_observations(self) -> bool:
        """Whether ``dense`` searches observation vectors itself (they live in its database);
        otherwise the engine asks the vector index and reads their rows after."""
        ...

    async def observation_rows(
        self,
        ws: str,
        ids: Sequence[str],
        message_ids: Sequence[str],
        scopes: Sequence[Scope],
        *,
        levels: Sequence[str] | None,
        confine: Confinement,
    ) -> tuple[list[ObservationRow], list[tuple[str, str]]]:
        """The live observations inside ``scopes`` among ``ids`` and among those citing one of
        ``message_ids`` (any order); and (message id, observation id) for each citation, each
        message's oldest first."""
        ...

    async def message_rows(
        self,
        ws: str,
        ids: Sequence[str],
        *,
        representation: tuple[str, str] | None,
        confine: Confinement,
        peer_id: str | None,
    ) -> list[tuple[ContextMessage, ContextMessage | None]]:
        """Each visible message among ``ids`` with the preceding turn of another speaker."""
        ...


class Reranker(Protocol):
    """Scores candidates against a query, higher is better; a deployment may configure one."""

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in order."""
        ...
