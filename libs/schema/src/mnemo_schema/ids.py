"""Identifiers: the pattern every user-chosen id must match, and server-generated ids."""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Annotated

from pydantic import Field, StringConstraints

from mnemo_schema.text import StoredJson

# Ids become NATS subject tokens, so they may not contain '.', '*', '>' or whitespace. 512
# characters, as the SDK allows: the longest subject, a representation's
# ``mnemo.evt.<ws>.obs.<observer>.<observed>``, is then about 1,560 bytes, well within
# nats-server's 4 KiB control line (which holds a publish's subject, reply subject and size).
ID_PATTERN = r"^[A-Za-z0-9_-]+$"
ID_MAX_LENGTH = 512

EntityId = Annotated[
    str, StringConstraints(pattern=ID_PATTERN, min_length=1, max_length=ID_MAX_LENGTH)
]
# Metadata as an event holds it: storable JSON (see ``text``), empty by default.
Metadata = Annotated[StoredJson, Field(default_factory=dict)]


def new_event_id() -> str:
    """A random event id (128 random bits, hex)."""
    return os.urandom(16).hex()


def _b64(raw: bytes) -> str:
    # URL-safe base64 uses only [A-Za-z0-9_-], so the id is also a valid entity id.
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def new_message_id() -> str:
    """A random 22-character message id (128 random bits)."""
    return _b64(os.urandom(16))


def derived_id(*parts: str) -> str:
    """A stable 22-character id derived from its parts, so a retried command yields the same ids."""
    return _b64(hashlib.sha256("\x1f".join(parts).encode()).digest()[:16])


def derived_event_id(*parts: str) -> str:
    """A stable event id (32 hex chars) derived from its parts."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
