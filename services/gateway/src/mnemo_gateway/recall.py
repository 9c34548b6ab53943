"""Confining recall to sessions, as the SDK asks for it: a scope, a list of scopes, an allowlist.

A single scope or a list of them reads the union of their member sessions; the ``sessions``
allowlist (``filters: {"session_id": [...]}`` on chat and representations, ``sessions`` on a
session's context) reads those sessions. Either way the read sees their messages and the
observations whose provenance rests on them alone, and no peer card (its entries carry no
provenance). An unknown scope is a 404; options that contradict each other are a 422 naming
them; an empty allowlist recalls nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from mnemo_gateway.store import ReadStore
from mnemo_schema.context_queries import MAX_SESSIONS
from mnemo_schema.errors import Refusal
from mnemo_schema.ids import EntityId

MAX_SCOPES = 100
# ``scope``: one scope's id, or a list of them (the union of their sessions).
ScopeOption = EntityId | Annotated[list[EntityId], Field(min_length=1, max_length=MAX_SCOPES)]


def _exclusive(first: str, second: str) -> Refusal:
    return Refusal(422, f"{first}: mutually exclusive with {second}", first)


def allowlist(filters: Mapping[str, Any] | None, field: str = "filters") -> list[str] | None:
    """The sessions of a recall route's ``filters``: only ``session_id`` (an id, a list of ids,
    or ``{"in": [...]}``) is accepted there; anything else is a 422 naming it."""
    if filters is None:
        return None
    for key in filters:
        if key != "session_id":
            raise Refusal(
                422, f"{field}.{key}: only session_id filters recall here", f"{field}.{key}"
            )
    at = f"{field}.session_id"
    value = filters.get("session_id")
    if isinstance(value, Mapping) and set(value) == {"in"}:
        value, at = value["in"], f"{at}.in"
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise Refusal(422, f'{at}: a session id, a list of them, or {{"in": [...]}}', at)
    if len(value) > MAX_SESSIONS:
        raise Refusal(422, f"{at}: at most {MAX_SESSIONS} sessions", at)
    for i, sid in enumerate(value):
        if not isinstance(sid, str) or not sid or sid == "*":
            raise Refusal(422, f"{at}.{i}: must be a session id", f"{at}.{i}")
    return list(dict.fromkeys(value))


async def sessions_of(
    store: ReadStore,
    ws: str,
    *,
    scope: str | list[str] | None = None,
    sessions: list[str] | None = None,
    session_id: str | None = None,
    scope_field: str = "scope",
    sessions_field: str = "filters",
) -> list[str] | None:
    """The sessions a recall is confined to (None: unconfined), from its options."""
    if scope is not None and sessions is not None:
        raise _exclusive(scope_field, sessions_field)
    if scope is not None and session_id is not None:
        raise _exclusive(scope_field, "session_id")
    if scope is not None:
        ids = [scope] if isinstance(scope, str) else list(dict.fromkeys(scope))
        return await store.scope_members(ws, ids, scope_field)
    return sessions
