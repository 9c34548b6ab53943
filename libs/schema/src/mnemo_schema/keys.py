"""Bearer keys: the scopes a key may have, and revocation through the log.

A key is a signed token (a JWT) naming what it reaches: everything (``admin``), one workspace, or
one peer or one session of a workspace. Keys are not stored; a key is withdrawn before it expires
by revoking its id: a ``RevokeKey`` command to ingest (``mnemo.keys.revoke``, request-reply)
appends ``KeyRevoked`` to the event log, and every gateway refuses the id from then on.

``KeyRevoked`` belongs to no workspace (an admin key has none), so it has no ``workspace`` and is
published on a subject outside every workspace's (``mnemo.evt.~keys.revoked``: ``~`` is not an
id character; the stream stores it under a partition token, ``STORED_KEY_EVENTS``). Projections
read it with the rest of the log and change nothing for it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo_schema.envelope import utcnow
from mnemo_schema.ids import EntityId, derived_event_id
from mnemo_schema.text import StorableText

KEY_COMMANDS: Final = "mnemo.keys.revoke"
KEY_EVENTS: Final = "mnemo.evt.~keys.revoked"
# As the stream stores them: like every event subject, with a partition token after the
# "workspace" (``mnemo_schema.subjects``); readers of the stream filter on this.
STORED_KEY_EVENTS: Final = "mnemo.evt.~keys.*.revoked"


class KeyScope(StrEnum):
    """What a key reaches, from the widest to the narrowest."""

    ADMIN = "admin"
    WORKSPACE = "workspace"
    PEER = "peer"
    SESSION = "session"


class RevokeKey(BaseModel):
    """Withdraw the key ``key_id`` before it expires (idempotent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["revoke_key"] = "revoke_key"
    key_id: EntityId
    # The key's own expiry, if known: a gateway may forget the revocation after it.
    expires_at: datetime | None = None
    correlation_id: StorableText | None = Field(default=None, max_length=255)


class KeyRevoked(BaseModel):
    """A key id was revoked; gateways refuse it from now on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["KeyRevoked"] = "KeyRevoked"
    event_id: str
    schema_version: int = 1
    occurred_at: datetime = Field(default_factory=utcnow)
    key_id: EntityId
    expires_at: datetime | None = None
    correlation_id: StorableText | None = None
    # W3C trace context of the request that revoked the key.
    trace: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def of(cls, cmd: RevokeKey, trace: dict[str, str] | None = None) -> KeyRevoked:
        """The event of ``cmd``; its id is derived from the key id, so a retry is one event."""
        return cls(
            event_id=derived_event_id("key-revoked", cmd.key_id),
            key_id=cmd.key_id,
            expires_at=cmd.expires_at,
            correlation_id=cmd.correlation_id,
            trace=trace or {},
        )

    def subject(self) -> str:
        """The subject this event is published on."""
        return KEY_EVENTS
