"""/v3/workspaces/{w}/webhooks: the workspace's endpoints, and a test event sent to them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from mnemo_gateway.api import Page
from mnemo_gateway.deps import PageQ, PathId, Svc, order
from mnemo_gateway.store import WEBHOOKS
from mnemo_gateway.webhooks.work import new_event, publish_event
from mnemo_schema import commands as c
from mnemo_schema.errors import Refusal
from mnemo_schema.webhooks import TEST_EVENT, WebhookUrl

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/webhooks", tags=["webhooks"])


class WebhookEndpointCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: WebhookUrl = Field(description="http or https URL that receives the events")


class WebhookEndpointOut(BaseModel):
    id: str
    workspace_id: str | None
    url: str
    created_at: datetime


def _out(row: Any) -> WebhookEndpointOut:
    return WebhookEndpointOut(
        id=row["id"], workspace_id=row["workspace"], url=row["url"], created_at=row["created_at"]
    )


@router.post("", response_model=WebhookEndpointOut)
async def get_or_create_webhook_endpoint(
    workspace_id: PathId, body: WebhookEndpointCreate, svc: Svc, response: Response
) -> WebhookEndpointOut:
    """Get the workspace's endpoint for ``url``, registering it if it has none (201)."""
    reply = await svc.bus.send(workspace_id, c.RegisterWebhookEndpoint(url=body.url))
    row = await svc.store.one(
        "SELECT * FROM webhook_endpoints WHERE workspace = %s AND url = %s",
        (workspace_id, body.url),
    )
    if row is None:  # stored in the log; the projection is late
        raise Refusal(503, "url: registered, not readable yet; retry", "url")
    response.status_code = 201 if reply.created else 200
    return _out(row)


@router.get("", response_model=Page[WebhookEndpointOut])
async def list_webhook_endpoints(
    workspace_id: PathId, svc: Svc, paging: PageQ
) -> Page[WebhookEndpointOut]:
    """The workspace's endpoints, oldest first, paginated."""
    await svc.store.workspace(workspace_id)
    rows, total, pages = await svc.store.page(
        WEBHOOKS,
        "workspace = %(ws)s",
        {"ws": workspace_id},
        None,
        paging.page,
        paging.size,
        order("created_at", paging),
    )
    return Page(
        items=[_out(r) for r in rows],
        total=total,
        page=paging.page,
        size=paging.size,
        pages=pages,
    )


@router.delete("/{endpoint_id}", status_code=204)
async def delete_webhook_endpoint(workspace_id: PathId, endpoint_id: PathId, svc: Svc) -> None:
    """Delete an endpoint: deliveries to it stop (those already queued are dropped)."""
    await svc.bus.send(workspace_id, c.DeleteWebhookEndpoint(endpoint_id=endpoint_id))


@router.get("/test")
async def test_emit(workspace_id: PathId, svc: Svc) -> None:
    """Send a ``test.event`` to every endpoint of the workspace."""
    await svc.store.workspace(workspace_id)
    js = svc.nc.jetstream()
    await publish_event(js, new_event(workspace_id, TEST_EVENT, {"workspace_id": workspace_id}))
