"""/v3/workspaces/{w}/schedule_dream: ask for a dream over one representation now."""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict

from mnemo_gateway.deps import PathId, Svc
from mnemo_runtime.bus import EventPublisher
from mnemo_schema.dreams import DreamDue
from mnemo_schema.envelope import utcnow
from mnemo_schema.ids import EntityId

router = APIRouter(prefix="/v3/workspaces/{workspace_id}", tags=["dreams"])


class ScheduleDreamIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    observer: EntityId
    observed: EntityId | None = None
    session_id: EntityId | None = None
    dream_type: str = "omni"


@router.post("/schedule_dream", status_code=204)
async def schedule_dream(workspace_id: PathId, body: ScheduleDreamIn, svc: Svc) -> Response:
    """Publish a DreamDue for (observer, observed); the dreamer runs it once the log holds it.

    Answered once the queue status counts the dream (the memory projection has applied the
    DreamDue), so waiting on the queue right after this sees the dream through.
    """
    observed = body.observed or body.observer
    await svc.store.peer(workspace_id, body.observer)
    if observed != body.observer:
        await svc.store.peer(workspace_id, observed)
    due = DreamDue(
        workspace=workspace_id,
        observer=body.observer,
        observed=observed,
        reason="requested",
        due_at=utcnow(),
        session_id=body.session_id,
        dream_type=body.dream_type,
    )
    (seq,) = await EventPublisher(svc.nc.jetstream()).publish([due])
    await svc.bus.seen(workspace_id, seq, memory=True)
    return Response(status_code=204)
