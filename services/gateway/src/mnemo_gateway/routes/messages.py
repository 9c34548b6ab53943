"""/v3/workspaces/{w}/sessions/{s}/messages"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Response
from pydantic import TypeAdapter

from mnemo_gateway import views
from mnemo_gateway.api import ListBody, MessageBatchCreate, MessageOut, MessageUpdate, Page
from mnemo_gateway.deps import PageQ, PathId, Services, Svc, order
from mnemo_gateway.store import MESSAGES
from mnemo_schema import commands as c

router = APIRouter(
    prefix="/v3/workspaces/{workspace_id}/sessions/{session_id}/messages", tags=["messages"]
)


_MESSAGES = TypeAdapter(list[MessageOut])
IDEMPOTENCY_KEY_MAX = 255


@router.post("", response_model=list[MessageOut], status_code=201)
async def create_messages(
    workspace_id: PathId,
    session_id: PathId,
    body: MessageBatchCreate,
    svc: Svc,
    idempotency_key: Annotated[str | None, Header(max_length=IDEMPOTENCY_KEY_MAX)] = None,
) -> Response:
    """Append 1..100 messages, all or nothing; a retry with the same Idempotency-Key is a no-op."""
    out = await post_messages(workspace_id, session_id, body, svc, idempotency_key)
    return Response(_MESSAGES.dump_json(out), status_code=201, media_type="application/json")


async def post_messages(
    workspace_id: str,
    session_id: str,
    body: MessageBatchCreate,
    svc: Services,
    idempotency_key: str | None = None,
) -> list[MessageOut]:
    """The messages as stored, once their projection has them (HTTP and gRPC alike)."""
    reply = await svc.bus.send(
        workspace_id,
        c.PostMessages(
            session_id=session_id, messages=body.messages, idempotency_key=idempotency_key
        ),
    )
    # Answered from the request and the reply (ids, token counts, time), without a read-back:
    # the bus has already waited for the messages' projection.
    when = reply.posted_at
    return [
        MessageOut(
            id=mid,
            content=m.content,
            peer_id=m.peer_id,
            session_id=session_id,
            workspace_id=workspace_id,
            metadata=m.metadata or {},
            created_at=m.created_at or when,
            token_count=tokens,
        )
        for mid, m, tokens in zip(reply.message_ids, body.messages, reply.token_counts, strict=True)
    ]


@router.post("/list", response_model=Page[MessageOut])
async def list_messages(
    workspace_id: PathId, session_id: PathId, svc: Svc, paging: PageQ, body: ListBody | None = None
) -> Page[MessageOut]:
    """Messages of a session in posting order, filtered and paginated."""
    await svc.store.session(workspace_id, session_id)
    rows, total, pages = await svc.store.page(
        MESSAGES,
        "workspace = %(ws)s AND session_id = %(sid)s",
        {"ws": workspace_id, "sid": session_id},
        body.filters if body else None,
        paging.page,
        paging.size,
        order("seq", paging),
    )
    items = [views.message(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.get("/{message_id}", response_model=MessageOut)
async def get_message(
    workspace_id: PathId, session_id: PathId, message_id: PathId, svc: Svc
) -> MessageOut:
    """One message."""
    return views.message(await svc.store.message(workspace_id, session_id, message_id))


@router.put("/{message_id}", response_model=MessageOut)
async def update_message(
    workspace_id: PathId, session_id: PathId, message_id: PathId, body: MessageUpdate, svc: Svc
) -> MessageOut:
    """Replace a message's metadata."""
    await svc.bus.send(
        workspace_id,
        c.UpdateMessageMetadata(
            session_id=session_id, message_id=message_id, metadata=body.metadata
        ),
    )
    return views.message(await svc.store.message(workspace_id, session_id, message_id))


@router.delete("/{message_id}", status_code=202)
async def delete_message(
    workspace_id: PathId, session_id: PathId, message_id: PathId, svc: Svc
) -> dict[str, str]:
    """Erase a message, the summaries covering it and what was derived from it."""
    await svc.bus.send(workspace_id, c.DeleteMessage(session_id=session_id, message_id=message_id))
    return {"status": "deleted"}
