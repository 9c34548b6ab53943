"""What the context handlers need from the read models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mnemo_context.domain import Observation
from mnemo_schema.context_queries import ContextMessage, ContextSummary


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
        self, ws: str, observer: str, observed: str, session_id: str | None, limit: int
    ) -> list[Observation]:
        """Live observations of the representation, newest first."""
        ...

    async def frequent_observations(
        self, ws: str, observer: str, observed: str, session_id: str | None, limit: int
    ) -> list[Observation]:
        """Live observations of the representation, most often derived first."""
        ...

    async def observations_by_id(
        self, ws: str, observer: str, observed: str, ids: Sequence[str]
    ) -> list[Observation]:
        """The live ones among ``ids`` inside the representation, in the order of ``ids``."""
        ...

    async def text_observations(
        self, ws: str, observer: str, observed: str, query: str, session_id: str | None, limit: int
    ) -> list[Observation]:
        """Full-text matches inside the representation, best first."""
        ...

    async def text_messages(
        self, ws: str, query: str, session_id: str | None, peer_id: str | None, limit: int
    ) -> list[ContextMessage]:
        """Full-text matches among the workspace's messages, best first."""
        ...

    async def source_messages(
        self, ws: str, observation_ids: Sequence[str], session_id: str | None, peer_id: str | None
    ) -> list[ContextMessage]:
        """Messages the observations cite, in the order of ``observation_ids``."""
        ...

    async def search_peers(self, ws: str, session_id: str | None, limit: int) -> list[str]:
        """Peers whose self-representations a search looks in: session members, or any."""
        ...
