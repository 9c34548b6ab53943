"""Rows of the read models -> response bodies."""

from __future__ import annotations

from typing import Any

from mnemo_gateway.api import MessageOut, PeerOut, SessionOut, WorkspaceOut

Row = dict[str, Any]


def workspace(r: Row) -> WorkspaceOut:
    return WorkspaceOut(
        id=r["id"],
        uid=r["uid"],
        metadata=r["metadata"],
        configuration=r["configuration"],
        created_at=r["created_at"],
    )


def peer(r: Row) -> PeerOut:
    return PeerOut(
        id=r["id"],
        uid=r["uid"],
        workspace_id=r["workspace"],
        metadata=r["metadata"],
        configuration=r["configuration"],
        created_at=r["created_at"],
    )


def session(r: Row) -> SessionOut:
    return SessionOut(
        id=r["id"],
        uid=r["uid"],
        workspace_id=r["workspace"],
        is_active=r["is_active"],
        metadata=r["metadata"],
        configuration=r["configuration"],
        created_at=r["created_at"],
    )


def message(r: Row) -> MessageOut:
    return MessageOut(
        id=r["id"],
        content=r["content"],
        peer_id=r["peer_id"],
        session_id=r["session_id"],
        workspace_id=r["workspace"],
        metadata=r["metadata"],
        created_at=r["created_at"],
        token_count=r["token_count"],
    )
