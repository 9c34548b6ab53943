"""Query handlers: read what a query needs, pack or rank it with the domain, reply."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from mnemo_context.domain import (
    Observation,
    choose_summary,
    fit_fixed,
    merge_unique,
    render_card,
    render_representation,
    representation_tokens,
    slice_within,
)
from mnemo_context.engine import RetrievalEngine
from mnemo_context.ports import Opening, Reads, StoredSummary, WindowPage
from mnemo_runtime.tokens import TokenCounter
from mnemo_schema.context_queries import (
    ContextMessage,
    ContextQuery,
    ContextReply,
    ObservationHit,
    ObservationSearchQuery,
    ObservationSearchReply,
    RepresentationQuery,
    RepresentationReply,
    RepresentationSlice,
    SearchQuery,
    SearchReply,
    allowed_sessions,
)
from mnemo_schema.errors import Refusal
from mnemo_schema.retrieval import (
    MessagesQuery,
    MessagesReply,
    RetrievalQuery,
    RetrievalReply,
    StoredQuery,
    StoredReply,
)

T = TypeVar("T")

# Pages of message sizes: a budget's worth at a few tokens a message, within bounds.
MIN_MESSAGE_TOKENS = 8
FIRST_PAGE = 32
MAX_PAGE = 4096


class ContextService:
    def __init__(
        self,
        reads: Reads,
        engine: RetrievalEngine | None,
        counter: TokenCounter | None = None,
    ) -> None:
        self._reads = reads
        self._engine = engine
        self._counter = counter or TokenCounter()

    def _ranker(self) -> RetrievalEngine:
        if self._engine is None:
            raise Refusal(503, "search needs the retrieval engine, which is not configured")
        return self._engine

    async def retrieve(self, ws: str, q: RetrievalQuery) -> RetrievalReply:
        """The engine's ranked messages and observations."""
        return await self._ranker().retrieve(ws, q)

    async def stored(self, ws: str, q: StoredQuery) -> StoredReply:
        """Observations by key, unranked: for the stages that hold their ids (the dialectic's
        tools, the dreamer's specialists and its check of what it writes)."""
        return await self._reads.stored(ws, q)

    async def stored_messages(self, ws: str, q: MessagesQuery) -> MessagesReply:
        """Messages by key, unranked: for the dialectic's tools and the dreamer's sources."""
        return await self._reads.stored_messages(ws, q)

    async def observations(
        self, ws: str, observer: str, observed: str, want: RepresentationSlice
    ) -> list[Observation]:
        """The slice: the engine's best for the search query if any, else newest (and most
        frequent)."""
        r, limit = self._reads, want.max_conclusions
        if want.search_query is not None:
            found = await self._ranker().retrieve(
                ws,
                RetrievalQuery(
                    query=want.search_query,
                    observer=observer,
                    observed=observed,
                    session_id=want.session_id,
                    sessions=want.sessions,
                    messages=0,
                    observations=want.search_top_k or limit,
                    max_distance=want.search_max_distance,
                    diverse=True,
                ),
            )
            return [
                Observation(o.id, o.level, o.content, o.token_count) for o in found.observations
            ]
        allowed = allowed_sessions(want.session_id, want.sessions)
        newest = await r.newest_observations(ws, observer, observed, allowed, limit)
        if not want.include_most_frequent:
            return newest
        frequent = await r.frequent_observations(ws, observer, observed, allowed, limit)
        by_id = {o.id: o for o in [*frequent, *newest]}
        order = merge_unique([o.id for o in frequent], [o.id for o in newest])
        return [by_id[i] for i in order]

    async def representation(self, ws: str, q: RepresentationQuery) -> RepresentationReply:
        """Markdown of the (observer, observed) slice, and its card when asked."""
        obs = await self.observations(ws, q.observer, q.observed, q.slice)
        # A card's entries carry no provenance: a read confined to sessions goes without it.
        confined = q.slice.sessions is not None
        with_card = q.with_card and not confined
        card = await self._reads.card(ws, q.observer, q.observed) if with_card else None
        return RepresentationReply(representation=render_representation(obs), peer_card=card)

    async def context(self, ws: str, q: ContextQuery) -> ContextReply:
        """The session's context packed to ``q.tokens`` (spec §7)."""
        rep_text: str | None = None
        rep_tokens: int | None = None
        card: list[str] | None = None
        early: WindowPage | None = None
        summaries: dict[str, StoredSummary] = {}
        # Independent of the slice, and read while the search query is embedded and searched:
        # the session's summaries and, with a slice to find, the target's card and the newest
        # messages for the whole budget after the older summary's coverage, in one round trip.
        # The window, once known, is the newest part of that page, so it costs no round trip
        # after the slice.
        opening: asyncio.Future[Opening] | None = None
        summaries_read: asyncio.Future[dict[str, StoredSummary]] | None = None
        if q.observer is not None and q.peer_target is not None:
            # A card's entries carry no provenance: a read confined to sessions goes without it.
            with_card = q.use_card and q.slice.sessions is None
            opening = _started(
                self._reads.opening(
                    ws,
                    q.session_id,
                    None if q.summary else 0,
                    page_size(q.tokens),
                    q.tokens,
                    summaries=q.summary,
                    card=(q.observer, q.peer_target) if with_card else None,
                )
            )
        elif q.summary:
            summaries_read = _started(self._reads.latest_summaries(ws, q.session_id))
        try:
            if q.observer is not None and q.peer_target is not None and opening is not None:
                want = q.slice
                if q.limit_to_session:
                    want = want.model_copy(update={"session_id": q.session_id})
                # Gathered, the slice's task runs after the read above has been sent.
                obs, opened = await asyncio.gather(
                    self.observations(ws, q.observer, q.peer_target, want), opening
                )
                card, early, summaries = opened.card, opened.page, opened.summaries
                card_tokens = self._counter.count(render_card(card)) if card else None
                # A slice larger than the budget is cut to its best part that fits beside the
                # card, rather than left out whole.
                room = q.tokens - (card_tokens or 0) if (card_tokens or 0) <= q.tokens else q.tokens
                obs = slice_within(obs, room, self._counter.count_many)
                rep_text = render_representation(obs) or None
                if rep_text is not None:
                    rep_tokens = representation_tokens(obs, self._counter.count_many)
            else:
                card_tokens = None
            fixed = fit_fixed(q.tokens, rep_tokens, card_tokens)
            if summaries_read is not None:
                summaries = await summaries_read
        except BaseException:
            for read in (summaries_read, opening):
                if read is not None:
                    read.cancel()
            raise

        short, long = summaries.get("short"), summaries.get("long")
        kind = choose_summary(
            fixed.remaining,
            short.summary.token_count if short else None,
            long.summary.token_count if long else None,
        )
        chosen = summaries[kind] if kind is not None else None
        summary_tokens = chosen.summary.token_count if chosen else 0
        after = chosen.message_seq if chosen else 0
        budget = fixed.remaining - summary_tokens
        messages = within(early, after, budget) if early is not None else None
        if messages is None:
            messages = await self._recent(ws, q.session_id, after, budget)
        used = (rep_tokens or 0) * fixed.representation + (card_tokens or 0) * fixed.card
        return ContextReply(
            session_id=q.session_id,
            messages=messages,
            summary=chosen.summary if chosen else None,
            peer_representation=rep_text if fixed.representation else None,
            peer_card=card if fixed.card else None,
            tokens=used + summary_tokens + sum(m.token_count for m in messages),
        )

    async def _recent(
        self, ws: str, session_id: str, after_seq: int, budget: int
    ) -> list[ContextMessage]:
        """Newest messages after ``after_seq`` that fit ``budget``, oldest first.

        Reads pages sized to the budget, never the session: usually one page, in one round trip.
        """
        taken: list[ContextMessage] = []
        before: int | None = None
        left = max(budget, 0)
        while left > 0:
            page = page_size(left)
            got = await self._reads.window_page(ws, session_id, after_seq, before, page, left)
            taken[:0] = got.messages
            left -= got.tokens
            # A message that did not fit, or the session's start: the window is complete.
            if len(got.messages) < got.read or got.read < page or got.first_seq is None:
                break
            before = got.first_seq
        return taken

    async def search(self, ws: str, q: SearchQuery) -> SearchReply:
        """Messages of the workspace (or a session, or a peer) ranked by the engine."""
        found = await self._ranker().retrieve(
            ws,
            RetrievalQuery(
                query=q.query,
                session_id=q.session_id,
                sessions=q.sessions,
                peer_id=q.peer_id,
                message_filters=q.filters,
                messages=q.limit,
            ),
        )
        return SearchReply(messages=[m.message for m in found.messages])

    async def observation_search(
        self, ws: str, q: ObservationSearchQuery
    ) -> ObservationSearchReply:
        """The best observations of one representation for the query, by the engine."""
        found = await self._ranker().retrieve(
            ws,
            RetrievalQuery(
                query=q.query,
                observer=q.observer,
                observed=q.observed,
                levels=q.levels,
                session_id=q.session_id,
                sessions=q.sessions,
                observation_filters=q.filters,
                messages=0,
                observations=q.top_k,
                max_distance=q.max_distance,
            ),
        )
        return ObservationSearchReply(
            hits=[ObservationHit(id=o.id, distance=o.distance) for o in found.observations]
        )


def page_size(budget: int) -> int:
    """Messages a window page asks for: a budget's worth at a few tokens each, within bounds."""
    return min(max(budget // MIN_MESSAGE_TOKENS, FIRST_PAGE), MAX_PAGE)


def within(page: WindowPage, after_seq: int, budget: int) -> list[ContextMessage] | None:
    """The window (after ``after_seq``, up to ``budget``) cut from a page read with a budget
    at least as large; None if the page cannot tell.

    The page took the newest messages while they fit its budget, so the window is its newest
    messages while they fit this one. The page settles the window unless every message it
    asked for fitted (older ones might still fit), or its lower bound is above ``after_seq``
    (older ones were not read): then only another read can say.
    """
    if after_seq < page.after_seq:
        return None
    ran_out = len(page.messages) < page.read or page.read < page_size(page.budget)
    taken = 0
    left = budget
    for seq, message in zip(reversed(page.seqs), reversed(page.messages), strict=True):
        if seq <= after_seq or message.token_count > left:
            ran_out = True
            break
        left -= message.token_count
        taken += 1
    if not ran_out:
        return None
    return page.messages[len(page.messages) - taken :]


def _started(read: Awaitable[T]) -> asyncio.Future[T]:
    """``read`` running as a task; an error it ends with counts as seen if it is never awaited
    (the request failed first)."""
    task = asyncio.ensure_future(read)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task
