"""HTTP request and response bodies, in the shapes the honcho-ai 2.7 SDK sends and parses."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from mnemo_schema.commands import MAX_BATCH, NewMessage
from mnemo_schema.config import (
    PeerConfig,
    SessionConfiguration,
    SessionPeerConfig,
    WorkspaceConfiguration,
)
from mnemo_schema.ids import EntityId
from mnemo_schema.text import JsonObject, Metadata

T = TypeVar("T")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkspaceCreate(_Body):
    id: EntityId
    metadata: Metadata | None = None
    configuration: WorkspaceConfiguration | None = None


class WorkspaceUpdate(_Body):
    metadata: Metadata | None = None
    configuration: WorkspaceConfiguration | None = None


class PeerCreate(_Body):
    id: EntityId
    metadata: Metadata | None = None
    configuration: PeerConfig | None = None


class PeerUpdate(_Body):
    metadata: Metadata | None = None
    configuration: PeerConfig | None = None


class SessionCreate(_Body):
    id: EntityId
    metadata: Metadata | None = None
    configuration: SessionConfiguration | None = None
    peers: dict[EntityId, SessionPeerConfig] | None = None
    # Scopes the session joins (each created if it does not exist yet).
    scopes: list[EntityId] | None = Field(default=None, max_length=MAX_BATCH)


class SessionUpdate(_Body):
    metadata: Metadata | None = None
    configuration: SessionConfiguration | None = None


class ListBody(_Body):
    filters: JsonObject | None = None


class MessageBatchCreate(_Body):
    messages: list[NewMessage] = Field(min_length=1, max_length=MAX_BATCH)


class MessageUpdate(_Body):
    metadata: Metadata


class WorkspaceOut(BaseModel):
    id: str
    uid: str
    metadata: dict[str, Any]
    configuration: dict[str, Any]
    created_at: datetime


class PeerOut(BaseModel):
    id: str
    uid: str
    workspace_id: str
    metadata: dict[str, Any]
    configuration: dict[str, Any]
    created_at: datetime


class SessionOut(BaseModel):
    id: str
    uid: str
    workspace_id: str
    is_active: bool
    metadata: dict[str, Any]
    configuration: dict[str, Any]
    created_at: datetime


class MessageOut(BaseModel):
    id: str
    content: str
    peer_id: str
    session_id: str
    workspace_id: str
    metadata: dict[str, Any]
    created_at: datetime
    token_count: int


class SessionPeerConfigOut(BaseModel):
    observe_me: bool | None = None
    observe_others: bool | None = None


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    page: int
    size: int
    pages: int
