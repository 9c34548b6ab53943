"""/v3/workspaces/{w}/peers/{p}/card: the compact, stable facts one peer holds about another."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from mnemo_gateway.deps import PathId, Svc
from mnemo_schema import commands as c
from mnemo_schema.ids import EntityId
from mnemo_schema.observations import MAX_CARD_ENTRIES, MAX_CARD_ENTRY_CHARS
from mnemo_schema.text import StorableText

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/peers/{peer_id}", tags=["peer cards"])

Target = Annotated[
    EntityId | None, Query(description="the observed peer; default: the peer itself")
]


class PeerCardOut(BaseModel):
    peer_card: list[str] | None = None


class PeerCardIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    peer_card: list[
        Annotated[StorableText, Field(min_length=1, max_length=MAX_CARD_ENTRY_CHARS)]
    ] = Field(max_length=MAX_CARD_ENTRIES)


async def read_card(svc: Svc, workspace_id: str, observer: str, observed: str) -> list[str] | None:
    """The card of (observer, observed), or None if there is none."""
    row = await svc.store.one(
        "SELECT card FROM peer_cards WHERE workspace = %s AND observer = %s AND observed = %s",
        (workspace_id, observer, observed),
    )
    return None if row is None else list(row["card"])


@router.get("/card", response_model=PeerCardOut)
async def get_peer_card(
    workspace_id: PathId, peer_id: PathId, svc: Svc, target: Target = None
) -> PeerCardOut:
    """This peer's card of ``target`` (its own card without one)."""
    await svc.store.peer(workspace_id, peer_id)
    if target is not None:
        await svc.store.peer(workspace_id, target)
    return PeerCardOut(peer_card=await read_card(svc, workspace_id, peer_id, target or peer_id))


@router.put("/card", response_model=PeerCardOut)
async def set_peer_card(
    workspace_id: PathId, peer_id: PathId, body: PeerCardIn, svc: Svc, target: Target = None
) -> PeerCardOut:
    """Replace this peer's card of ``target`` (its own card without one)."""
    observed = target or peer_id
    await svc.bus.send(
        workspace_id,
        c.SetPeerCard(observer_id=peer_id, observed_id=observed, card=body.peer_card),
        memory=True,
    )
    return PeerCardOut(peer_card=await read_card(svc, workspace_id, peer_id, observed))
