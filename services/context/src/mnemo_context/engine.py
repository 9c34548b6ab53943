"""The retrieval engine: one ranking of messages and observations behind every read.

For a question it gathers four ranked lists, each from its own index:

- message passages by BM25 and by their MiniLM vectors (a long message is searched by passage
  and scored by its best one);
- observations by BM25 and by their vectors, in the representations the question concerns.

With fact-augmented keys, each kind also ranks the other: an observation's rank lifts the
messages it came from (a message is found through what was derived from it), and a message's
rank lifts the observations derived from it. The lists are fused by weighted reciprocal rank
(``ranking``, ``fusion``), the question's understanding boosts what it points at
(``understanding``), and a configured reranker, if any, reorders the head. Messages come back
deduplicated, each with the preceding turn of the other speaker as context; observations for a
slice to pack into a budget (``diverse``) come spread over the messages they rest on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

from mnemo_context.fusion import DEFAULT_WEIGHTS, Weights
from mnemo_context.ports import (
    Confinement,
    EvidenceReads,
    Lists,
    ListsAsk,
    ObservationAsk,
    ObservationRow,
    PassageAsk,
    PassageHit,
    Reranker,
)
from mnemo_context.query_vectors import QueryVectors
from mnemo_context.ranking import Found, Gathered, rank_messages, rank_observations
from mnemo_context.understanding import Understanding, named_peers, understand
from mnemo_runtime.filter_sql import CONCLUSION_COLUMNS, MESSAGE_COLUMNS, compile_filters, qualified
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.vectors import Scope, SearchFilters, VectorHit
from mnemo_schema.filters import CONCLUSION_FIELDS, MESSAGE_FIELDS
from mnemo_schema.observations import Level
from mnemo_schema.retrieval import (
    COMPONENTS,
    Component,
    RankedMessage,
    RankedObservation,
    RetrievalQuery,
    RetrievalReply,
)

T = TypeVar("T")
# Self-representations a workspace-wide query looks in when the question names nobody.
SEARCH_PEERS = 16
# How long the workspace's peer names are remembered (names only boost; staleness is harmless).
PEERS_TTL_S = 5.0
# Each list reads this many candidates per result asked for (and the configured depth at least).
CANDIDATES_PER_RESULT = 3
# A confined query's vector search reads this many times deeper: the index knows neither a
# caller's filter nor an observation's provenance, so what it finds is narrowed by the rows.
CONFINED_DEPTH = 3
# A question asking for messages reads their passages up to this many times the list depth, and
# keeps them until they name twice the list depth of messages: a long message's passages fill
# several places each (100 passages of BEAM's long messages name a few dozen messages), while a
# list of one-passage messages stays as deep as before (deeper, it lets more candidates into the
# time boosts and moves the "now" they count from). Fitted on the tuning half (see the README).
MESSAGE_PASSAGE_DEPTH = 4
_MESSAGE_COLUMNS = qualified(MESSAGE_COLUMNS, "m")
_OBSERVATION_COLUMNS = qualified(CONCLUSION_COLUMNS, "o")


def confinement(q: RetrievalQuery) -> Confinement:
    """The sessions and filters ``q`` is confined to, compiled (a 422 Refusal if invalid)."""
    messages = observations = None
    if q.message_filters:
        messages = compile_filters(q.message_filters, _MESSAGE_COLUMNS, MESSAGE_FIELDS, "mf")
    if q.observation_filters:
        observations = compile_filters(
            q.observation_filters, _OBSERVATION_COLUMNS, CONCLUSION_FIELDS, "of"
        )
    return Confinement(q.allowed, messages, observations)


@dataclass(frozen=True)
class EngineConfig:
    """Candidates per list, fusion weights, and how much of the head a reranker reorders."""

    depth: int = 50
    weights: Weights = field(default_factory=lambda: DEFAULT_WEIGHTS)
    rerank_depth: int = 30
    # Query vectors remembered per workspace (0: none), each for ``query_cache_s`` seconds
    # (``query_vectors``).
    query_cache: int = 256
    query_cache_s: float = 60.0


class RetrievalEngine:
    """Answers ``RetrievalQuery``; components missing here (no index, no reranker) sit out."""

    def __init__(
        self,
        reads: EvidenceReads,
        memory: MemoryAdapters | None,
        *,
        reranker: Reranker | None = None,
        config: EngineConfig | None = None,
    ) -> None:
        self._reads = reads
        self._memory = memory
        self._reranker = reranker
        self._config = config or EngineConfig()
        self._peers: dict[str, tuple[float, dict[str, list[str]]]] = {}
        self._queries = (
            QueryVectors(memory.embedder, self._config.query_cache, self._config.query_cache_s)
            if memory is not None
            else None
        )

    def components(self, without: frozenset[Component] = frozenset()) -> frozenset[Component]:
        """The components a query runs with here."""
        on = set(COMPONENTS) - set(without)
        if self._memory is None:
            on.discard("dense")
        if self._reranker is None:
            on.discard("rerank")
        return frozenset(on)

    async def peers(self, ws: str) -> dict[str, list[str]]:
        """The workspace's peers and their names, remembered for a few seconds."""
        now = time.monotonic()
        cached = self._peers.get(ws)
        if cached is not None and now - cached[0] < PEERS_TTL_S:
            return cached[1]
        names = await self._reads.peer_names(ws)
        if len(self._peers) > 1024:
            self._peers.clear()
        self._peers[ws] = (now, names)
        return names

    async def retrieve(self, ws: str, q: RetrievalQuery) -> RetrievalReply:
        """Messages and observations for ``q``, best first."""
        g = await self.gather(ws, q)
        reply = RetrievalReply()
        if q.messages:
            reply.messages = await self._messages(ws, q, g)
        if q.observations:
            reply.observations = await self._observations(q, g)
        return reply

    async def gather(self, ws: str, q: RetrievalQuery) -> Gathered:
        """Every list's candidates for ``q`` and what the question says, before any ranking."""
        on = self.components(q.without)
        peers = await self.peers(ws)
        named = named_peers(q.query, peers) if "names" in on else frozenset()
        scopes = self._scopes(ws, q, peers, named)
        confine = confinement(q)
        found = await self._gather(ws, q, on, scopes, confine)
        return Gathered(found, self._understanding(q, peers, found, on), on, confine)

    def _scopes(
        self, ws: str, q: RetrievalQuery, peers: dict[str, list[str]], named: frozenset[str]
    ) -> list[Scope]:
        if q.observer is not None and q.observed is not None:
            return [Scope(ws, q.observer, q.observed)]
        who = [q.peer_id] if q.peer_id else sorted(named) or sorted(peers)[:SEARCH_PEERS]
        return [Scope(ws, p, p) for p in who]

    async def _gather(
        self,
        ws: str,
        q: RetrievalQuery,
        on: frozenset[Component],
        scopes: list[Scope],
        confine: Confinement,
    ) -> Found:
        """The four lists (those that are on and needed), then the rows they point at."""
        depth = max(self._config.depth, CANDIDATES_PER_RESULT * max(q.messages, q.observations))
        facts = "facts" in on
        want_m = bool(q.messages) or (facts and bool(q.observations))
        want_o = bool(q.observations) or (facts and bool(q.messages))
        rep = q.in_representation
        senders = [q.observed] if rep and q.observed else [q.peer_id] if q.peer_id else None
        observer = q.observer if rep else None
        levels: list[Level] | None = list(q.levels) if q.levels else None
        # Passages are read deeper when messages are asked for (a long message's passages fill
        # several places); only to lift observations, the list depth does.
        passage_depth = MESSAGE_PASSAGE_DEPTH * depth if q.messages else depth
        distinct = 2 * depth if q.messages else depth
        passages = (
            PassageAsk(senders, observer, confine, passage_depth, distinct) if want_m else None
        )
        observations = (
            ObservationAsk(scopes, levels, confine, depth, cite=facts and bool(q.observations))
            if want_o
            else None
        )
        reads: list[tuple[str, asyncio.Future[Lists]]] = []
        indexed: asyncio.Future[list[list[VectorHit]]] | None = None
        if "lexical" in on and (want_m or want_o):
            ask = ListsAsk(passages, observations)
            reads.append(("lexical", _start(self._reads.lexical(ws, q.query, ask))))
        # Embedded after the lexical lists are sent: a short query embeds on the event loop's
        # thread, and Postgres answers them on another core meanwhile.
        if "dense" in on and self._memory is not None and (want_m or want_o):
            assert self._queries is not None
            vector = await self._queries.vector(ws, q.query)
            model = self._memory.embedder.model_name
            if passages is not None:
                # Only scoping the rows of the observations citing the passages found.
                scoping = replace(observations, listed=False) if observations else None
                ask = ListsAsk(passages, scoping)
                reads.append(("dense", _start(self._reads.dense(ws, vector, model, ask))))
            if observations is not None:
                # The index knows neither a caller's filter nor an observation's provenance:
                # what it finds is narrowed by the rows, so a confined query reads deeper.
                confined = confine.sessions is not None or confine.observations is not None
                nearest = replace(
                    observations, limit=depth * CONFINED_DEPTH if confined else depth, cite=False
                )
                if self._reads.searches_observations:
                    ask = ListsAsk(None, nearest)
                    reads.append(("dense", _start(self._reads.dense(ws, vector, model, ask))))
                else:
                    index, filters = self._memory.index, SearchFilters.of(levels=levels)
                    searches = [
                        index.search(vector, s, limit=nearest.limit, filters=filters)
                        for s in scopes
                    ]
                    indexed = _start(asyncio.gather(*searches))
        return await self._found(ws, scopes, observations, reads, indexed)

    async def _found(
        self,
        ws: str,
        scopes: list[Scope],
        observations: ObservationAsk | None,
        reads: list[tuple[str, asyncio.Future[Lists]]],
        indexed: asyncio.Future[list[list[VectorHit]]] | None,
    ) -> Found:
        """The lists as they came in, and the rows they point at, as one read would give them:
        each observation once, each message's citing observations oldest first."""
        found = Found()
        rows: dict[str, ObservationRow] = {}
        cites: set[tuple[str, str]] = set()
        for name, read in reads:
            got = await read
            if got.passages:
                found.passages[name] = got.passages
            if got.observations:
                found.observations[name] = [i for i, _ in got.observations]
                if name == "dense":
                    found.distances = {i: 1.0 - score for i, score in got.observations}
            rows |= {r.id: r for r in got.rows}
            cites.update(got.cites)
        if indexed is not None and observations is not None:
            # Best first; equal scores by id, as the in-database search orders them.
            hits = sorted((h for hs in await indexed for h in hs), key=lambda h: (-h.score, h.id))
            found.observations["dense"] = [h.id for h in hits]
            found.distances = {h.id: h.distance for h in hits}
            unread = [h.id for h in hits if h.id not in rows]
            got_rows, _ = await self._reads.observation_rows(
                ws, unread, [], scopes, levels=observations.levels, confine=observations.confine
            )
            rows |= {r.id: r for r in got_rows}
        found.rows = {r.id: r for r in sorted(rows.values(), key=lambda r: (r.created_at, r.id))}
        for mid, oid in sorted(cites, key=lambda c: (rows[c[1]].created_at, c[1], c[0])):
            found.citing.setdefault(mid, []).append(oid)
        # Observations the index still holds but the store no longer does (deleted) drop out.
        for name, ranking in found.observations.items():
            found.observations[name] = [i for i in ranking if i in found.rows]
        return found

    def _understanding(
        self,
        q: RetrievalQuery,
        peers: dict[str, list[str]],
        found: Found,
        on: frozenset[Component],
    ) -> Understanding:
        # "Last week" counts from the query's own time, else from the newest evidence found.
        times: list[datetime] = [h.created_at for hs in found.passages.values() for h in hs]
        times += [r.at for r in found.rows.values()]
        now = q.now or (max(times) if times else None)
        understood = understand(q.query, peers if "names" in on else {}, now)
        if "time" not in on:
            understood = Understanding(understood.named, (), understood.current)
        if "recency" not in on:
            understood = Understanding(understood.named, understood.windows, False)
        return understood

    async def _messages(self, ws: str, q: RetrievalQuery, g: Gathered) -> list[RankedMessage]:
        confine = g.confine
        order, scores, found_by, passage = rank_messages(g, self._config.weights)
        # Twice what is asked: a message lifted from an observation may be outside the query's
        # session or peer, and is dropped when its row is read.
        reranking = "rerank" in g.on and self._reranker is not None
        wide = confine.messages is not None or confine.sessions is not None
        head = order[
            : max(q.messages * (4 if wide else 2), self._config.rerank_depth if reranking else 0)
        ]
        rows = await self._reads.message_rows(
            ws,
            head,
            representation=(q.observer, q.observed) if q.observer and q.observed else None,
            confine=confine,
            peer_id=q.peer_id,
        )
        by_id = {m.id: (m, prev) for m, prev in rows}
        head = [i for i in head if i in by_id]
        if reranking and head:
            texts = [_passage_text(by_id[i][0].content, passage.get(i)) for i in head]
            head = await self._reorder(q.query, head, texts, scores)
        out = []
        for i in head[: q.messages]:
            message, previous = by_id[i]
            hit = passage.get(i)
            out.append(
                RankedMessage(
                    message=message,
                    score=scores[i],
                    previous=previous,
                    found_by=found_by[i],
                    passage=(hit.start, hit.end) if hit is not None else None,
                )
            )
        return out

    async def _observations(self, q: RetrievalQuery, g: Gathered) -> list[RankedObservation]:
        reranking = "rerank" in g.on and self._reranker is not None
        needed = max(q.observations, self._config.rerank_depth) if reranking else q.observations
        order, scores, found_by = rank_observations(
            g, self._config.weights, q.max_distance, diverse=q.diverse, needed=needed
        )
        found = g.found
        if reranking and order:
            head = order[:needed]
            texts = [found.rows[i].content for i in head]
            order = await self._reorder(q.query, head, texts, scores)
        return [
            _ranked_observation(found.rows[i], scores[i], found.distances.get(i), found_by[i])
            for i in order[: q.observations]
        ]

    async def _reorder(
        self, query: str, ids: list[str], texts: list[str], scores: dict[str, float]
    ) -> list[str]:
        assert self._reranker is not None
        given = await self._reranker.rerank(query, texts)
        if len(given) != len(ids):
            raise ValueError(f"the reranker scored {len(given)} of {len(ids)} candidates")
        for i, s in zip(ids, given, strict=True):
            scores[i] = float(s)
        return [i for _, i in sorted(zip(given, ids, strict=True), key=lambda p: -p[0])]


def _passage_text(content: str, hit: PassageHit | None) -> str:
    return content if hit is None else content[hit.start : hit.end]


def _ranked_observation(
    r: ObservationRow, score: float, distance: float | None, found_by: Sequence[str]
) -> RankedObservation:
    return RankedObservation(
        id=r.id,
        level=r.level,
        content=r.content,
        observer=r.observer,
        observed=r.observed,
        session_id=r.session_id,
        created_at=r.created_at,
        observed_at=r.observed_at,
        premise_ids=list(r.premise_ids),
        source_message_ids=list(r.source_message_ids),
        times_derived=r.times_derived,
        token_count=r.token_count,
        score=score,
        distance=distance,
        found_by=list(found_by),
    )


def _start(work: Awaitable[T]) -> asyncio.Future[T]:
    """``work`` running; an error it ends with counts as seen if it is never awaited."""
    task = asyncio.ensure_future(work)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task
