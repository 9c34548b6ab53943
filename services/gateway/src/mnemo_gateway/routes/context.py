"""Honcho v3 routes answered by the context service: get_context, representations, search."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo_gateway.api import MessageOut
from mnemo_gateway.deps import PathId, Services, Svc
from mnemo_gateway.recall import ScopeOption, allowlist, sessions_of
from mnemo_gateway.routes.summaries import SummaryOut, summary_view
from mnemo_runtime import rpc
from mnemo_schema import subjects
from mnemo_schema.config import uses_card
from mnemo_schema.context_queries import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_MAX_CONCLUSIONS,
    MAX_CONTEXT_TOKENS,
    ContextMessage,
    ContextQuery,
    ContextReply,
    RepresentationQuery,
    RepresentationReply,
    RepresentationSlice,
    SearchQuery,
    SearchReply,
)
from mnemo_schema.errors import Refusal, refusal
from mnemo_schema.filters import MESSAGE_FIELDS, parse
from mnemo_schema.ids import EntityId
from mnemo_schema.text import JsonObject, QueryText

router = APIRouter(prefix="/v3/workspaces/{workspace_id}", tags=["context"])

QUERY_TIMEOUT = 30.0
R = TypeVar("R", bound=BaseModel)

TopK = Annotated[int | None, Query(ge=1, le=100)]
QueryId = Annotated[EntityId | None, Query()]
SearchParam = Annotated[QueryText | None, Query(max_length=10_000)]
MaxDistance = Annotated[float | None, Query(ge=0.0, le=1.0)]
MaxConclusions = Annotated[int | None, Query(ge=1, le=100)]


class SessionContextOut(BaseModel):
    id: str
    messages: list[MessageOut]
    summary: SummaryOut | None = None
    peer_representation: str | None = None
    peer_card: list[str] | None = None


class PeerRepresentationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_id: EntityId | None = None
    target: EntityId | None = None
    search_query: QueryText | None = None
    search_top_k: int | None = Field(default=None, ge=1, le=100)
    search_max_distance: float | None = Field(default=None, ge=0.0, le=1.0)
    include_most_frequent: bool | None = None
    max_conclusions: int | None = Field(default=DEFAULT_MAX_CONCLUSIONS, ge=1, le=100)
    scope: ScopeOption | None = None
    filters: JsonObject | None = None


class RepresentationOut(BaseModel):
    representation: str


class PeerContextOut(BaseModel):
    peer_id: str
    target_id: str
    representation: str | None = None
    peer_card: list[str] | None = None


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: QueryText = Field(min_length=1, max_length=10_000)
    filters: JsonObject | None = None
    limit: int = Field(default=10, ge=1, le=100)
    # The scope's sessions only; not with a session_id filter.
    scope: EntityId | None = None


async def _ask(svc: Services, ws: str, query: BaseModel, kind: str, reply: type[R]) -> R:
    return await rpc.call(svc.nc, subjects.query_subject(ws, kind), query, reply, QUERY_TIMEOUT)


def _build(model: type[R], **fields: Any) -> R:
    """A query model, its validation errors as a 422 naming the field."""
    try:
        return model(**fields)
    except ValidationError as err:
        # The slice's fields are query parameters of their own in the request.
        raise refusal(err, skip=("slice",)) from err


def _slice(
    search_query: str | None,
    top_k: int | None,
    distance: float | None,
    frequent: bool | None,
    max_conclusions: int | None,
    session_id: str | None = None,
    sessions: list[str] | None = None,
) -> RepresentationSlice:
    return _build(
        RepresentationSlice,
        search_query=search_query or None,
        search_top_k=top_k,
        search_max_distance=distance,
        include_most_frequent=bool(frequent),
        max_conclusions=max_conclusions or DEFAULT_MAX_CONCLUSIONS,
        session_id=session_id,
        sessions=sessions,
    )


async def _checked(
    svc: Services,
    ws: str,
    session_id: str,
    peers: list[str],
    build: Callable[[bool], ContextQuery],
) -> ContextReply:
    """The context read and the session's check (it exists, and so do ``peers``; the
    configuration in force) at once: the check is a round trip to Postgres that had the read
    wait for it, 0.7 ms at p50 and 8 ms at p99 while 1,000 messages a second were posted. The
    read asks for the card as the default configuration does; when the session's configuration
    says otherwise, which the check tells, the read is asked again. Everything the check refuses
    is refused as when it came first, the read's own answer dropped."""
    checking = asyncio.ensure_future(svc.store.session_read(ws, session_id, peers))
    try:
        query = build(True)
    except Refusal:
        await checking  # a 404 before the request's own 422, as when checked first
        raise
    reading = asyncio.ensure_future(_ask(svc, ws, query, ContextQuery.KIND, ContextReply))
    reading.add_done_callback(_retrieved)
    try:
        cfg = await checking
    except BaseException:
        reading.cancel()
        raise
    if uses_card(cfg) != query.use_card:
        reading.cancel()
        return await _ask(svc, ws, build(uses_card(cfg)), ContextQuery.KIND, ContextReply)
    return await reading


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Marks a dropped read's failure as seen (its request has been answered otherwise)."""
    if not task.cancelled():
        task.exception()


def _message(m: ContextMessage) -> MessageOut:
    return MessageOut.model_validate(m.model_dump())


@router.get("/sessions/{session_id}/context", response_model=SessionContextOut)
async def session_context(
    workspace_id: PathId,
    session_id: PathId,
    svc: Svc,
    tokens: Annotated[int, Query(ge=0, le=MAX_CONTEXT_TOKENS)] = DEFAULT_CONTEXT_TOKENS,
    summary: bool = True,
    peer_target: QueryId = None,
    peer_perspective: QueryId = None,
    search_query: SearchParam = None,
    search_top_k: TopK = None,
    search_max_distance: MaxDistance = None,
    limit_to_session: bool = False,
    include_most_frequent: bool | None = None,
    max_conclusions: MaxConclusions = None,
    scope: QueryId = None,
    sessions: Annotated[list[EntityId] | None, Query(max_length=1000)] = None,
) -> SessionContextOut:
    """Recent messages, the session summary and the target's slice and card, within ``tokens``.

    ``scope`` or ``sessions`` confine the target's representation to those sessions (and leave
    the card out); ``sessions`` must include this session."""
    if peer_perspective is not None and peer_target is None:
        raise Refusal(422, "peer_perspective: needs peer_target", "peer_perspective")
    for option, given in (("scope", scope), ("sessions", sessions)):
        if given is not None and peer_target is None:
            raise Refusal(422, f"{option}: needs peer_target", option)
    if scope is not None and peer_perspective is not None:
        raise Refusal(422, "scope: mutually exclusive with peer_perspective", "scope")
    if sessions is not None and limit_to_session:
        raise Refusal(422, "sessions: mutually exclusive with limit_to_session", "sessions")
    if sessions is not None and session_id not in sessions:
        raise Refusal(422, f"sessions: must include this session ({session_id!r})", "sessions")
    peers = list(dict.fromkeys(p for p in (peer_target, peer_perspective) if p is not None))

    def build(use_card: bool, confined: list[str] | None) -> ContextQuery:
        return _build(
            ContextQuery,
            session_id=session_id,
            tokens=tokens,
            summary=summary,
            peer_target=peer_target,
            peer_perspective=peer_perspective,
            limit_to_session=limit_to_session,
            use_card=use_card,
            slice=_slice(
                search_query,
                search_top_k,
                search_max_distance,
                include_most_frequent,
                max_conclusions,
                sessions=confined,
            ),
        )

    if scope is not None:  # the scope's sessions are read once the session is known
        cfg = await svc.store.session_read(workspace_id, session_id, peers)
        confined = await sessions_of(
            svc.store, workspace_id, scope=scope, sessions=sessions, sessions_field="sessions"
        )
        query = build(uses_card(cfg), confined)
        got = await _ask(svc, workspace_id, query, ContextQuery.KIND, ContextReply)
    else:
        got = await _checked(
            svc, workspace_id, session_id, peers, lambda card: build(card, sessions)
        )
    return SessionContextOut(
        id=session_id,
        messages=[_message(m) for m in got.messages],
        summary=summary_view(got.summary.model_dump()) if got.summary else None,
        peer_representation=got.peer_representation,
        peer_card=got.peer_card,
    )


async def _representation(
    svc: Services,
    ws: str,
    observer: str,
    target: str | None,
    want: RepresentationSlice,
    with_card: bool,
) -> RepresentationReply:
    await svc.store.peer(ws, observer)
    if target is not None and target != observer:
        await svc.store.peer(ws, target)
    query = RepresentationQuery(
        observer=observer, observed=target or observer, slice=want, with_card=with_card
    )
    return await _ask(svc, ws, query, RepresentationQuery.KIND, RepresentationReply)


@router.post("/peers/{peer_id}/representation", response_model=RepresentationOut)
async def peer_representation(
    workspace_id: PathId, peer_id: PathId, body: PeerRepresentationIn, svc: Svc
) -> RepresentationOut:
    """What this peer believes about ``target`` (itself without one), as markdown."""
    sessions = await sessions_of(
        svc.store,
        workspace_id,
        scope=body.scope,
        sessions=allowlist(body.filters),
        session_id=body.session_id,
    )
    want = _slice(
        body.search_query,
        body.search_top_k,
        body.search_max_distance,
        body.include_most_frequent,
        body.max_conclusions,
        body.session_id,
        sessions,
    )
    got = await _representation(svc, workspace_id, peer_id, body.target, want, False)
    return RepresentationOut(representation=got.representation)


@router.get("/peers/{peer_id}/context", response_model=PeerContextOut)
async def peer_context(
    workspace_id: PathId,
    peer_id: PathId,
    svc: Svc,
    target: QueryId = None,
    search_query: SearchParam = None,
    search_top_k: TopK = None,
    search_max_distance: MaxDistance = None,
    include_most_frequent: bool | None = None,
    max_conclusions: MaxConclusions = None,
) -> PeerContextOut:
    """This peer's representation and card of ``target`` (itself without one)."""
    want = _slice(
        search_query, search_top_k, search_max_distance, include_most_frequent, max_conclusions
    )
    with_card = uses_card(await svc.store.configuration(workspace_id))
    got = await _representation(svc, workspace_id, peer_id, target, want, with_card)
    return PeerContextOut(
        peer_id=peer_id,
        target_id=target or peer_id,
        representation=got.representation,
        peer_card=got.peer_card,
    )


async def _search(
    svc: Services,
    ws: str,
    body: SearchIn,
    session_id: str | None,
    peer_id: str | None,
) -> list[MessageOut]:
    parse(body.filters, MESSAGE_FIELDS)  # refused here, naming the field, before any search
    if body.scope is not None and session_id is not None:
        raise Refusal(422, "scope: mutually exclusive with a session", "scope")
    if body.scope is not None and "session_id" in (body.filters or {}):
        raise Refusal(422, "scope: mutually exclusive with a session_id filter", "scope")
    sessions = await sessions_of(svc.store, ws, scope=body.scope)
    query = SearchQuery(
        query=body.query,
        limit=body.limit,
        session_id=session_id,
        peer_id=peer_id,
        sessions=sessions,
        filters=body.filters,
    )
    got = await _ask(svc, ws, query, SearchQuery.KIND, SearchReply)
    return [_message(m) for m in got.messages]


@router.post("/search", response_model=list[MessageOut])
async def search_workspace(workspace_id: PathId, body: SearchIn, svc: Svc) -> list[MessageOut]:
    """Messages of the workspace matching ``query`` by words and by meaning."""
    await svc.store.workspace(workspace_id)
    return await _search(svc, workspace_id, body, None, None)


@router.post("/sessions/{session_id}/search", response_model=list[MessageOut])
async def search_session(
    workspace_id: PathId, session_id: PathId, body: SearchIn, svc: Svc
) -> list[MessageOut]:
    """Messages of one session matching ``query``."""
    await svc.store.session(workspace_id, session_id)
    return await _search(svc, workspace_id, body, session_id, None)


@router.post("/peers/{peer_id}/search", response_model=list[MessageOut])
async def search_peer(
    workspace_id: PathId, peer_id: PathId, body: SearchIn, svc: Svc
) -> list[MessageOut]:
    """Messages one peer sent matching ``query``."""
    await svc.store.peer(workspace_id, peer_id)
    return await _search(svc, workspace_id, body, None, peer_id)
