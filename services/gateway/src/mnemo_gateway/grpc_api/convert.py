"""Between protos and the shapes the handlers take and give (the HTTP API's models).

Resource names are read into the path ids HTTP has, each validated as HTTP validates it, so a
bad id is refused naming the same field. ``google.protobuf.Struct`` carries only doubles: a whole
number that fits 64 bits comes back as an integer, as JSON would give it.
"""

from __future__ import annotations

import base64
import math
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format, struct_pb2, timestamp_pb2
from mnemo.v1 import resources_pb2 as pb
from pydantic import TypeAdapter, ValidationError

from mnemo_gateway.api import MessageOut, PeerOut, SessionOut, WorkspaceOut
from mnemo_schema.errors import Refusal, refusal
from mnemo_schema.ids import EntityId

_ID = TypeAdapter(EntityId)
_INT64 = 2**63
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50

# Collection segment of a resource name -> the path parameter HTTP calls its id.
_SEGMENTS = {
    "workspaces": "workspace_id",
    "peers": "peer_id",
    "sessions": "session_id",
    "messages": "message_id",
    "conclusions": "conclusion_id",
}


def ids_of(name: str, pattern: str, field: str = "name") -> dict[str, str]:
    """The ids in a resource ``name`` of the shape ``pattern`` (``workspaces/*/sessions/*``),
    each checked like a path id; a refusal naming ``field`` if the shape does not match."""
    parts = name.split("/")
    shape = pattern.split("/")
    if len(parts) != len(shape) or any(
        s != "*" and p != s for p, s in zip(parts, shape, strict=True)
    ):
        raise Refusal(422, f"{field}: must be a resource name of the form {pattern}", field)
    out: dict[str, str] = {}
    for i in range(1, len(parts), 2):
        key = _SEGMENTS[shape[i - 1]]
        try:
            out[key] = _ID.validate_python(parts[i])
        except ValidationError as err:
            raise refusal(err, at=key) from err
    return out


def plain(value: Any) -> Any:
    """A Struct's JSON value, whole numbers as integers."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if -_INT64 <= value < _INT64 else value
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def struct_of(message: Any, field: str) -> dict[str, Any] | None:
    """The dict a Struct field holds, or None when the field is unset."""
    if not message.HasField(field):
        return None
    found: dict[str, Any] = plain(json_format.MessageToDict(getattr(message, field)))
    return found


def to_struct(value: dict[str, Any] | None) -> struct_pb2.Struct | None:
    """A dict as a Struct (None stays unset)."""
    if value is None:
        return None
    out = struct_pb2.Struct()
    out.update(value)
    return out


def time_of(message: Any, field: str) -> datetime | None:
    """A Timestamp field as a UTC datetime, or None when unset."""
    if not message.HasField(field):
        return None
    stamp: timestamp_pb2.Timestamp = getattr(message, field)
    return stamp.ToDatetime(tzinfo=UTC)


def to_time(value: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(value)
    return out


def optional(message: Any, field: str) -> Any:
    """An ``optional`` scalar field's value, or None when unset."""
    return getattr(message, field) if message.HasField(field) else None


def paging(page_size: int, page_token: str) -> tuple[int, int]:
    """(page, size) from a page size and token; the token is the page number, opaque."""
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        raise Refusal(422, f"page_size: must be 0 to {MAX_PAGE_SIZE}", "page_size")
    page = 1
    if page_token:
        try:
            page = int(base64.urlsafe_b64decode(page_token.encode()).decode())
        except (ValueError, UnicodeDecodeError) as err:
            raise Refusal(422, "page_token: not a token this API gave", "page_token") from err
        if page < 1:
            raise Refusal(422, "page_token: not a token this API gave", "page_token")
    return page, page_size or DEFAULT_PAGE_SIZE


def next_token(page: int, pages: int) -> str:
    """The token of the page after ``page``, empty after the last."""
    return base64.urlsafe_b64encode(str(page + 1).encode()).decode() if page < pages else ""


def workspace(w: WorkspaceOut) -> pb.Workspace:
    return pb.Workspace(
        name=f"workspaces/{w.id}",
        id=w.id,
        uid=w.uid,
        metadata=to_struct(w.metadata),
        configuration=to_struct(w.configuration),
        create_time=to_time(w.created_at),
    )


def peer(p: PeerOut) -> pb.Peer:
    return pb.Peer(
        name=f"workspaces/{p.workspace_id}/peers/{p.id}",
        id=p.id,
        uid=p.uid,
        workspace_id=p.workspace_id,
        metadata=to_struct(p.metadata),
        configuration=to_struct(p.configuration),
        create_time=to_time(p.created_at),
    )


def session(s: SessionOut) -> pb.Session:
    return pb.Session(
        name=f"workspaces/{s.workspace_id}/sessions/{s.id}",
        id=s.id,
        uid=s.uid,
        workspace_id=s.workspace_id,
        is_active=s.is_active,
        metadata=to_struct(s.metadata),
        configuration=to_struct(s.configuration),
        create_time=to_time(s.created_at),
    )


def message(m: MessageOut) -> pb.Message:
    return pb.Message(
        name=f"workspaces/{m.workspace_id}/sessions/{m.session_id}/messages/{m.id}",
        id=m.id,
        content=m.content,
        peer_id=m.peer_id,
        session_id=m.session_id,
        workspace_id=m.workspace_id,
        metadata=to_struct(m.metadata),
        create_time=to_time(m.created_at),
        token_count=m.token_count,
    )


def mask_allows(mask: Any, field: str, given: bool) -> bool:
    """Whether an update replaces ``field``: named by the mask, or, without one, given."""
    paths = set(mask.paths) if mask is not None else set()
    unknown = paths - {"metadata", "configuration"}
    if unknown:
        name = sorted(unknown)[0]
        raise Refusal(422, f"update_mask: {name!r} cannot be updated", "update_mask")
    return field in paths if paths else given


def entity(value: str, field: str) -> str:
    """``value`` checked as an id, or a refusal naming ``field``."""
    try:
        return str(_ID.validate_python(value))
    except ValidationError as err:
        raise refusal(err, at=field) from err


def parse_time(value: str) -> datetime:
    """An ISO 8601 time (as the HTTP API renders summaries' times)."""
    return datetime.fromisoformat(value)


def search_scope(parent: str) -> dict[str, str]:
    """The ids of a search's parent: a workspace, a session or a peer."""
    parts = parent.split("/")
    pattern = {2: "workspaces/*", 4: f"workspaces/*/{parts[2] if len(parts) > 2 else '*'}/*"}.get(
        len(parts), "workspaces/*"
    )
    if len(parts) == 4 and parts[2] not in ("sessions", "peers"):
        pattern = "workspaces/*/sessions/*"
    return ids_of(parent, pattern, "parent")
