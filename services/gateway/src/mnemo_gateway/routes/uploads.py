"""/v3/workspaces/{w}/sessions/{s}/messages/upload: a file's text as messages."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Response, UploadFile
from pydantic import TypeAdapter, ValidationError

from mnemo_gateway.api import MessageOut
from mnemo_gateway.deps import PathId, Svc
from mnemo_gateway.files import content_type_of, extract_text, split_text
from mnemo_schema import commands as c
from mnemo_schema.errors import Refusal, refusal
from mnemo_schema.files import UploadedFile
from mnemo_schema.ids import EntityId, new_message_id

router = APIRouter(
    prefix="/v3/workspaces/{workspace_id}/sessions/{session_id}/messages", tags=["messages"]
)

_MESSAGES = TypeAdapter(list[MessageOut])


def _json_field(raw: str | None, name: str) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as err:
        raise Refusal(422, f"{name}: not valid JSON ({err})", name) from err


@router.post("/upload", response_model=list[MessageOut], status_code=201)
async def upload_file(
    workspace_id: PathId,
    session_id: PathId,
    svc: Svc,
    file: Annotated[UploadFile, File()],
    peer_id: Annotated[EntityId, Form()],
    metadata: Annotated[str | None, Form()] = None,
    configuration: Annotated[str | None, Form()] = None,
    created_at: Annotated[str | None, Form()] = None,
) -> Response:
    """Messages from ``peer_id`` holding a text, markdown, JSON or PDF file's text, split into
    parts that fit a message; all of them or none."""
    data = await file.read()
    filename = file.filename or "upload"
    kind = content_type_of(filename, file.content_type)
    # PDF parsing is CPU work: off the event loop, so other requests go on meanwhile.
    text = await asyncio.to_thread(extract_text, data, kind)
    if not text.strip():
        raise Refusal(422, "file: holds no text", "file")
    parts = split_text(text, c.MAX_CONTENT_CHARS)
    if len(parts) > c.MAX_BATCH:
        raise Refusal(
            413,
            f"file: its text makes {len(parts)} messages of up to {c.MAX_CONTENT_CHARS}"
            f" characters; at most {c.MAX_BATCH} are taken at once",
            "file",
        )
    fields = {
        "peer_id": peer_id,
        "metadata": _json_field(metadata, "metadata"),
        "configuration": _json_field(configuration, "configuration"),
        "created_at": created_at,
    }
    try:
        messages = [c.NewMessage.model_validate({**fields, "content": p}) for p in parts]
        upload = UploadedFile(file_id=new_message_id(), filename=filename, content_type=kind)
    except ValidationError as err:
        # Errors in the text itself (a NUL, say) are the file's; the others name the form field.
        raise refusal(err, rename={"content": "file"}) from err
    reply = await svc.bus.send(
        workspace_id, c.PostMessages(session_id=session_id, messages=messages, file=upload)
    )
    out = [
        MessageOut(
            id=mid,
            content=m.content,
            peer_id=m.peer_id,
            session_id=session_id,
            workspace_id=workspace_id,
            metadata=m.metadata or {},
            created_at=m.created_at or reply.posted_at,
            token_count=tokens,
        )
        for mid, m, tokens in zip(reply.message_ids, messages, reply.token_counts, strict=True)
    ]
    return Response(_MESSAGES.dump_json(out), status_code=201, media_type="application/json")
