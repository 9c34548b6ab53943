"""Honcho v3 routes answered by the dialectic service: chat, plain or as Server-Sent Events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict

from mnemo_gateway.deps import PathId, Services, Svc
from mnemo_gateway.recall import ScopeOption, allowlist, sessions_of
from mnemo_runtime import rpc
from mnemo_schema import subjects
from mnemo_schema.answer_format import ResponseFormat
from mnemo_schema.config import instructions
from mnemo_schema.dialectic_queries import (
    ChatAnswer,
    ChatChunk,
    ChatQuery,
    ReasoningLevel,
    WorkspaceChatQuery,
)
from mnemo_schema.errors import Refusal
from mnemo_schema.ids import EntityId
from mnemo_schema.text import JsonObject, StorableText

router = APIRouter(prefix="/v3/workspaces/{workspace_id}", tags=["dialectic"])

# A deep reasoning level makes several model calls; the gateway waits for all of them.
CHAT_TIMEOUT_S = 300.0
MAX_QUERY = 10_000


class WorkspaceChatBody(BaseModel):
    """The SDK's workspace chat parameters."""

    model_config = ConfigDict(extra="forbid")

    # Checked in the route: a length error here would be reported against the whole body.
    query: StorableText
    session_id: EntityId | None = None
    stream: bool = False
    reasoning_level: ReasoningLevel = "low"
    response_format: ResponseFormat | None = None
    include_evidence: bool = False
    # Recall confined to a scope's (or scopes') sessions, or to ``filters: {"session_id": ...}``.
    scope: ScopeOption | None = None
    filters: JsonObject | None = None


class ChatBody(WorkspaceChatBody):
    """The SDK's DialecticParams."""

    target: EntityId | None = None


def _checked(body: WorkspaceChatBody) -> None:
    if not body.query.strip() or len(body.query) > MAX_QUERY:
        raise Refusal(422, f"query: must be 1 to {MAX_QUERY} characters, not blank", "query")


async def _confined(ws: str, body: WorkspaceChatBody, svc: Services) -> list[str] | None:
    """The sessions the answer may draw on (None: all), from the scope and the filters."""
    return await sessions_of(
        svc.store,
        ws,
        scope=body.scope,
        sessions=allowlist(body.filters),
        session_id=body.session_id,
    )


def _sse(chunk: ChatChunk) -> bytes:
    return f"data: {chunk.model_dump_json(exclude={'citations'})}\n\n".encode()


@router.post("/peers/{peer_id}/chat", response_model=ChatAnswer)
async def chat(workspace_id: PathId, peer_id: PathId, body: ChatBody, svc: Svc) -> Any:
    """Ask what ``peer_id`` knows about ``target`` (itself by default)."""
    query = await chat_query(workspace_id, peer_id, body, svc)
    return await _ask(svc, workspace_id, query, body.stream)


@router.post("/chat", response_model=ChatAnswer)
async def workspace_chat(workspace_id: PathId, body: WorkspaceChatBody, svc: Svc) -> Any:
    """Ask about the whole workspace: every peer's messages and self-representation."""
    _checked(body)
    await svc.store.workspace(workspace_id)
    if body.session_id is not None:
        await svc.store.session(workspace_id, body.session_id)
    sessions = await _confined(workspace_id, body, svc)
    cfg = await svc.store.configuration(workspace_id, body.session_id)
    query = WorkspaceChatQuery(
        session_id=body.session_id,
        sessions=sessions,
        query=body.query,
        reasoning_level=body.reasoning_level,
        include_evidence=body.include_evidence,
        response_format=body.response_format,
        instructions=instructions(cfg, "dialectic"),
    )
    return await _ask(svc, workspace_id, query, body.stream)


async def _ask(
    svc: Services, workspace_id: str, query: ChatQuery | WorkspaceChatQuery, stream: bool
) -> Any:
    subject = subjects.query_subject(workspace_id, query.KIND)
    nc = svc.nc
    if not stream:
        return await rpc.call(nc, subject, query, ChatAnswer, CHAT_TIMEOUT_S, cancellable=True)
    chunks = rpc.stream(nc, subject, query, ChatChunk, CHAT_TIMEOUT_S, cancellable=True)
    # The first chunk is awaited here so a refused query is an HTTP error, not a broken stream.
    first = await anext(chunks)

    async def events() -> AsyncIterator[bytes]:
        yield _sse(first)
        if first.done:
            return
        try:
            async for chunk in chunks:
                yield _sse(chunk)
        except Refusal:
            # Headers are sent; end the stream so the client sees it finish.
            yield _sse(ChatChunk(done=True))

    return StreamingResponse(events(), media_type="text/event-stream")


async def chat_query(workspace_id: str, peer_id: str, body: ChatBody, svc: Services) -> ChatQuery:
    """The dialectic's query for ``body``, once its peers and session are known to exist."""
    _checked(body)
    await svc.store.peer(workspace_id, peer_id)
    if body.target is not None:
        try:
            await svc.store.peer(workspace_id, body.target)
        except Refusal as err:
            raise Refusal(404, f"peer {body.target!r} not found", "target") from err
    if body.session_id is not None:
        await svc.store.session(workspace_id, body.session_id)
    sessions = await _confined(workspace_id, body, svc)
    cfg = await svc.store.configuration(workspace_id, body.session_id)
    return ChatQuery(
        observer=peer_id,
        observed=body.target or peer_id,
        session_id=body.session_id,
        sessions=sessions,
        query=body.query,
        reasoning_level=body.reasoning_level,
        include_evidence=body.include_evidence,
        response_format=body.response_format,
        instructions=instructions(cfg, "dialectic"),
    )
