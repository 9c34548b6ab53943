"""The one error type of every edge (HTTP, bus commands, queries) and how validation fills it.

A refusal carries the HTTP status to answer with, a detail in plain words that starts with the
field at fault, and that field as a dotted path (``messages.3.content``,
``metadata.tags.0``). The same refusal is an HTTP error body, a ``CommandReply.error`` and a
query's error reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

# Parts of a location that say where a value came from rather than which field it is.
_SOURCES = frozenset({"body", "query", "path", "header", "cookie"})


class Refusal(Exception):
    """A request that cannot be carried out; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field

    def as_dict(self) -> dict[str, Any]:
        """``{"status", "detail", "field"}``."""
        return {"status": self.status, "detail": self.detail, "field": self.field}

    def body(self) -> bytes:
        """The refusal as a query's error reply: ``{"error": {...}}``."""
        return json.dumps({"error": self.as_dict()}).encode()


def field_of(
    error: Mapping[str, Any],
    skip: Iterable[str] = (),
    rename: Mapping[str, str] | None = None,
) -> str:
    """The dotted field of one pydantic error.

    Leaves out the request part a value came from, the tags of a discriminated union
    (``skip``), and appends the path inside a JSON object that the JSON rules of
    ``mnemo_schema.text`` put in the error's context.
    """
    loc = list(error.get("loc", ()))
    if loc and loc[0] in _SOURCES:  # FastAPI's first part; a field may be named "query" too
        loc = loc[1:]
    hidden = set(skip)
    parts = [str(p) for p in loc if p not in hidden]
    if parts and rename and parts[0] in rename:
        parts[0] = rename[parts[0]]
    inner = (error.get("ctx") or {}).get("path")
    if isinstance(inner, list):
        parts.extend(str(p) for p in inner)
    return ".".join(parts) or "body"


def field_errors(
    errors: Sequence[Mapping[str, Any]],
    skip: Iterable[str] = (),
    rename: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """Every error as ``{"field", "message", "type"}``."""
    skip = tuple(skip)
    return [
        {"field": field_of(e, skip, rename), "message": str(e.get("msg", "")), "type": e["type"]}
        for e in errors
    ]


def refusal(
    errors: ValidationError | Sequence[Mapping[str, Any]],
    *,
    status: int = 422,
    skip: Iterable[str] = (),
    rename: Mapping[str, str] | None = None,
    at: str | None = None,
) -> Refusal:
    """A refusal naming the first invalid field: ``"<field>: <reason>"``. ``at``: the field a
    value validated on its own came in (its errors' locations are inside it)."""
    listed = errors.errors() if isinstance(errors, ValidationError) else errors
    if at is not None:
        listed = [{**e, "loc": (at, *e.get("loc", ()))} for e in listed]
    named = field_errors(listed, skip, rename)
    if not named:
        return Refusal(status, "body: invalid request", "body")
    first = named[0]
    return Refusal(status, f"{first['field']}: {first['message']}", first["field"])
