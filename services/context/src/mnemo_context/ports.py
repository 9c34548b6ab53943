"""What the context handlers need from the read models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mnemo_context.domain import Observation
from mnemo_runtime.vectors.ports import Scope, VectorLike
from mnemo_schema.context_queries import ContextMessage, ContextSummary
from mnemo_schema.observations import Level


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


@dataclass(frozen=True, slots=True)
class PassageHit:
    """A passage of a message that matched a query, with the score of the list that found it."""

    message_id: str
    passage: int
    score: float
    peer_id: str
    created_at: datetime
    start: int
    end: int
    parts: int = 1
    """How many passages its message has."""


@dataclass(frozen=True, slots=True)
class ObservationRow:
    """A live observation and the messages it rests on (its premises' ones included)."""

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


class EvidenceReads(Protocol):
    """What the retrieval engine reads: ranked candidates from each index, then their rows."""

    async def peer_names(self, ws: str) -> dict[str, list[str]]:
        """Every peer of the workspace, with the names (besides its id) it goes by."""
        ...

    async def lexical_passages(
        self,
        ws: str,
        query: str,
        *,
        senders: Sequence[str] | None,
        observer: str | None,
        confine: Confinement,
        limit: int,
    ) -> list[PassageHit]:
        """Passages by BM25, best first: of ``senders`` (any when None), visible to ``observer``."""
        ...

    async def dense_passages(
        self,
        ws: str,
        vector: VectorLike,
        model: str,
        *,
        sender: str | None,
        observer: str | None,
        confine: Confinement,
        limit: int,
    ) -> list[PassageHit]:
        """Passages nearest ``vector`` among those embedded by ``model``, best first."""
        ...

    async def lexical_observations(
        self,
        ws: str,
        query: str,
        scopes: Sequence[Scope],
        *,
        levels: Sequence[str] | None,
        confine: Confinement,
        limit: int,
    ) -> list[tuple[str, float]]:
        """Live observations of ``scopes`` by BM25, best first, as (id, score)."""
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
