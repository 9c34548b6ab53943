"""/v3/workspaces/{w}/sessions/{s}/summaries: the newest short and long summary."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from mnemo_gateway.deps import PathId, Svc

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/sessions/{session_id}", tags=["summaries"])


class SummaryOut(BaseModel):
    content: str
    message_id: str
    summary_type: str
    created_at: str
    token_count: int


class SessionSummariesOut(BaseModel):
    id: str
    short_summary: SummaryOut | None = None
    long_summary: SummaryOut | None = None


def summary_view(row: dict[str, Any] | None) -> SummaryOut | None:
    """A summaries row as the SDK reads it."""
    if row is None:
        return None
    return SummaryOut(
        content=row["content"],
        message_id=row["message_id"],
        summary_type=row["summary_type"],
        created_at=row["created_at"].isoformat(),
        token_count=row["token_count"],
    )


async def latest_summary(
    svc: Svc, workspace_id: str, session_id: str, kind: str
) -> dict[str, Any] | None:
    """The newest summary of ``kind`` (short or long) of a session."""
    return await svc.store.one(
        "SELECT * FROM summaries WHERE workspace = %s AND session_id = %s AND summary_type = %s"
        " ORDER BY seq DESC LIMIT 1",
        (workspace_id, session_id, kind),
    )


@router.get("/summaries", response_model=SessionSummariesOut)
async def get_summaries(workspace_id: PathId, session_id: PathId, svc: Svc) -> SessionSummariesOut:
    """The session's newest short and long summaries (either may not exist yet)."""
    await svc.store.session(workspace_id, session_id)
    return SessionSummariesOut(
        id=session_id,
        short_summary=summary_view(await latest_summary(svc, workspace_id, session_id, "short")),
        long_summary=summary_view(await latest_summary(svc, workspace_id, session_id, "long")),
    )
