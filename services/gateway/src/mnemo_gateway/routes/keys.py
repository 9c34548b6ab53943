"""/v3/keys: minting keys (as the reference server does: ids as query parameters, ``{"key"}``
back) and revoking them. Both need an admin key (see ``auth.policy``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from mnemo_gateway.deps import PathId, Svc
from mnemo_schema.errors import Refusal
from mnemo_schema.ids import ID_MAX_LENGTH, ID_PATTERN
from mnemo_schema.keys import KeyScope, RevokeKey

router = APIRouter(prefix="/v3/keys", tags=["keys"])

QueryId = Annotated[str | None, Query(pattern=ID_PATTERN, min_length=1, max_length=ID_MAX_LENGTH)]


class KeyOut(BaseModel):
    key: str
    key_id: str
    scope: KeyScope
    workspace_id: str | None = None
    peer_id: str | None = None
    session_id: str | None = None
    expires_at: datetime | None = None


@router.post("", response_model=KeyOut)
async def create_key(
    svc: Svc,
    workspace_id: QueryId = None,
    peer_id: QueryId = None,
    session_id: QueryId = None,
    expires_at: datetime | None = None,
) -> KeyOut:
    """Mint a key for a workspace, or for one peer or one session of it; optionally expiring."""
    if workspace_id is None:
        raise Refusal(
            422,
            "workspace_id: a key is for a workspace (and maybe one peer or session of it)",
            "workspace_id",
        )
    if peer_id is not None and session_id is not None:
        raise Refusal(
            422, "session_id: a key is for a peer or for a session, not both", "session_id"
        )
    if expires_at is not None:
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        if expires_at <= datetime.now(UTC):
            raise Refusal(422, "expires_at: must be in the future", "expires_at")
    scope = KeyScope.PEER if peer_id else KeyScope.SESSION if session_id else KeyScope.WORKSPACE
    token, claims = svc.authority.signer().mint(
        scope, workspace_id, peer_id, session_id, expires_at
    )
    return KeyOut(
        key=token,
        key_id=claims.key_id,
        scope=scope,
        workspace_id=workspace_id,
        peer_id=peer_id,
        session_id=session_id,
        expires_at=None
        if claims.expires_at is None
        else datetime.fromtimestamp(claims.expires_at, UTC),
    )


@router.delete("/{key_id}", status_code=204)
async def revoke_key(key_id: PathId, svc: Svc) -> None:
    """Revoke a key by its id (``key_id`` of the minted key, its ``jti``); idempotent.

    Answered once this gateway refuses the key; the others follow from the log within moments.
    """
    revocations = svc.authority.revocations
    if revocations is None:
        raise Refusal(501, "authentication is off here (MNEMO_AUTH=off): there are no keys")
    reply = await svc.bus.revoke_key(RevokeKey(key_id=key_id))
    await revocations.wait(reply.watermark, timeout=10)
