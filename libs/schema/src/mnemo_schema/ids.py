"""Identifiers: the pattern every user-chosen id must match, and server-generated ids."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Annotated

from pydantic import Field, StringConstraints

# Ids become NATS subject tokens, so they may not contain '.', '*', '>' or whitespace.
ID_PATTERN = r"^[A-Za-z0-9_-]+$"
ID_MAX_LENGTH = 100

EntityId = Annotated[
    str, StringConstraints(pattern=ID_PATTERN, min_length=1, max_length=ID_MAX_LENGTH)
]
Metadata = Annotated[dict[str, object], Field(default_factory=dict)]

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_event_id() -> str:
    """A random event id (UUID4 hex)."""
    return uuid.uuid4().hex


def _base62(raw: bytes, length: int) -> str:
    n = int.from_bytes(raw, "big")
    out = []
    for _ in range(length):
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return "".join(out)


def new_message_id() -> str:
    """A random 21-character message id."""
    return _base62(secrets.token_bytes(16), 21)


def derived_id(*parts: str, length: int = 21) -> str:
    """A stable id derived from its parts, so a retried command yields the same ids."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return _base62(digest[:16], length)


def derived_event_id(*parts: str) -> str:
    """A stable event id (32 hex chars) derived from its parts."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
