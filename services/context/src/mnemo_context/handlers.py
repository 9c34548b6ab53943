"""Query handlers: read what a query needs, pack or rank it with the domain, reply."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from mnemo_context.domain import (
    Observation,
    choose_summary,
    fit_fixed,
    merge_unique,
    reciprocal_rank_fusion,
    render_card,
    render_representation,
    representation_tokens,
)
from mnemo_context.ports import Reads, WindowPage
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.tokens import TokenCounter
from mnemo_runtime.vectors import Scope, SearchFilters, VectorHit
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
)
from mnemo_schema.errors import Refusal

T = TypeVar("T")

# Pages of message sizes: a budget's worth at a few tokens a message, within bounds.
MIN_MESSAGE_TOKENS = 8
FIRST_PAGE = 32
MAX_PAGE = 4096
# Self-representations a workspace-wide search looks in; beyond this, full-text alone ranks.
SEARCH_PEERS = 32
# Candidates per ranking before fusion: enough that a hit ranked low by one list can surface.
DEPTH = 3


class ContextService:
    def __init__(
        self, reads: Reads, memory: MemoryAdapters | None, counter: TokenCounter | None = None
    ) -> None:
        self._reads = reads
        self._memory = memory
        self._counter = counter or TokenCounter()

    async def _vector_ids(
        self,
        scopes: Sequence[Scope],
        query: str,
        limit: int,
        session_id: str | None = None,
        max_distance: float | None = None,
    ) -> list[str] | None:
        """Observation ids nearest ``query`` in ``scopes``, best first; None without an index."""
        if self._memory is None or not scopes:
            return None
        vector = await self._memory.embedder.embed_query(query)
        filters = SearchFilters.of(session_id=session_id)
        searches = [
            self._memory.index.search(
                vector, scope, limit=limit, filters=filters, max_distance=max_distance
            )
            for scope in scopes
        ]
        # One scope (a slice) is awaited directly: a task per search costs a loop turn.
        found = [await searches[0]] if len(searches) == 1 else await asyncio.gather(*searches)
        hits: list[VectorHit] = sorted((h for hs in found for h in hs), key=lambda h: h.distance)
        return [h.id for h in hits][:limit]

    async def observations(
        self, ws: str, observer: str, observed: str, want: RepresentationSlice
    ) -> list[Observation]:
        """The slice: nearest to the search query if any, else newest (and most frequent)."""
        r, limit = self._reads, want.max_conclusions
        if want.search_query is not None:
            top_k = want.search_top_k or limit
            ids = await self._vector_ids(
                [Scope(ws, observer, observed)], want.search_query, top_k,
                want.session_id, want.search_max_distance,
            )  # fmt: skip
            if ids is not None:
                return await r.observations_by_id(ws, observer, observed, ids)
            return await r.text_observations(
                ws, observer, observed, want.search_query, want.session_id, top_k
            )
        newest = await r.newest_observations(ws, observer, observed, want.session_id, limit)
        if not want.include_most_frequent:
            return newest
        frequent = await r.frequent_observations(ws, observer, observed, want.session_id, limit)
        by_id = {o.id: o for o in [*frequent, *newest]}
        order = merge_unique([o.id for o in frequent], [o.id for o in newest])
        return [by_id[i] for i in order]

    async def representation(self, ws: str, q: RepresentationQuery) -> RepresentationReply:
        """Markdown of the (observer, observed) slice, and its card when asked."""
        obs = await self.observations(ws, q.observer, q.observed, q.slice)
        card = await self._reads.card(ws, q.observer, q.observed) if q.with_card else None
        return RepresentationReply(representation=render_representation(obs), peer_card=card)

    async def context(self, ws: str, q: ContextQuery) -> ContextReply:
        """The session's context packed to ``q.tokens`` (spec §7)."""
        rep_text: str | None = None
        rep_tokens: int | None = None
        card: list[str] | None = None
        # Independent of the slice: read while the search query is embedded and searched.
        summaries_read = asyncio.ensure_future(
            self._reads.latest_summaries(ws, q.session_id) if q.summary else _nothing()
        )
        # With a slice to find, the card and the newest messages are read meanwhile too: the
        # messages for the whole budget, after the older summary's coverage (found by the same
        # read). The window, once known, is the newest part of that page, so it costs no
        # round trip after the slice.
        early: asyncio.Future[WindowPage] | None = None
        card_read: asyncio.Future[list[str] | None] | None = None
        if q.observer is not None and q.peer_target is not None:
            after = None if q.summary else 0
            early = _started(
                self._reads.window_page(
                    ws, q.session_id, after, None, page_size(q.tokens), q.tokens
                )
            )
            card_read = _started(self._reads.card(ws, q.observer, q.peer_target))
        try:
            if q.observer is not None and q.peer_target is not None and card_read is not None:
                want = q.slice
                if q.limit_to_session:
                    want = want.model_copy(update={"session_id": q.session_id})
                # Gathered, the slice's task runs after the reads above have been sent.
                obs, card = await asyncio.gather(
                    self.observations(ws, q.observer, q.peer_target, want), card_read
                )
                rep_text = render_representation(obs) or None
                if rep_text is not None:
                    rep_tokens = representation_tokens(obs, self._counter.count_many)
            card_tokens = self._counter.count(render_card(card)) if card else None
            fixed = fit_fixed(q.tokens, rep_tokens, card_tokens)
        except BaseException:
            for read in (summaries_read, early, card_read):
                if read is not None:
                    read.cancel()
            raise

        summaries = await summaries_read
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
        messages = within(await early, after, budget) if early is not None else None
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
        """Full-text and observation-vector rankings of messages, fused by reciprocal rank."""
        depth = q.limit * DEPTH
        text = await self._reads.text_messages(ws, q.query, q.session_id, q.peer_id, depth)
        rankings = [[m.id for m in text]]
        found = {m.id: m for m in text}
        if self._memory is not None:
            peers = (
                [q.peer_id]
                if q.peer_id is not None
                else await self._reads.search_peers(ws, q.session_id, SEARCH_PEERS)
            )
            scopes = [Scope(ws, p, p) for p in peers]
            ids = await self._vector_ids(scopes, q.query, depth, q.session_id)
            cited = await self._reads.source_messages(ws, ids or [], q.session_id, q.peer_id)
            rankings.append(merge_unique(m.id for m in cited))
            found.update((m.id, m) for m in cited)
        ranked = reciprocal_rank_fusion(rankings)[: q.limit]
        return SearchReply(messages=[found[i] for i in ranked])

    async def observation_search(
        self, ws: str, q: ObservationSearchQuery
    ) -> ObservationSearchReply:
        """The nearest observations of one representation, as ids and cosine distances."""
        if self._memory is None:
            raise Refusal(503, "semantic search needs the vector index (set QDRANT_URL)")
        vector = await self._memory.embedder.embed_query(q.query)
        hits = await self._memory.index.search(
            vector, Scope(ws, q.observer, q.observed), limit=q.top_k,
            filters=SearchFilters.of(levels=q.levels, session_id=q.session_id),
            max_distance=q.max_distance,
        )  # fmt: skip
        return ObservationSearchReply(
            hits=[ObservationHit(id=h.id, distance=h.distance) for h in hits]
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


async def _nothing() -> dict[str, Any]:
    return {}
