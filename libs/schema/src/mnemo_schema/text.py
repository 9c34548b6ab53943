"""What every store can hold: the rules for text and JSON that reach the log or a projection.

Refused, wherever text enters (HTTP bodies, path and query parameters, bus commands):

- U+0000 (NUL): Postgres ``text`` and ``jsonb`` cannot hold it;
- a lone surrogate (U+D800..U+DFFF not in a pair): no UTF-8 store can hold it, yet Python
  strings and JSON ``\\ud800`` escapes carry one.

Times must carry a time zone offset within -15:59 and +15:59 (Postgres's range), or none.

Every other character is kept as sent (no normalisation): tabs, newlines, other control
characters, non-characters, any script.

JSON objects (metadata, filters) hold only null, booleans, strings as above, finite numbers,
integers that fit 64 bits (signed), lists and objects with string keys of at most
``MAX_KEY_CHARS`` characters, nested at most ``MAX_JSON_DEPTH`` levels. Metadata is also at
most ``MAX_METADATA_BYTES`` of UTF-8 JSON.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

MAX_JSON_DEPTH = 10
MAX_KEY_CHARS = 256
MAX_METADATA_BYTES = 65_536
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Deeper than this, JSON encoders in the projections give up (orjson: 255).
MAX_STORED_DEPTH = 128

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None if it can."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    char = found.group()
    what = "NUL (U+0000)" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
    return f"contains {what} at index {found.start()}, which cannot be stored"


def _text(value: str) -> str:
    reason = unstorable(value)
    if reason is not None:
        raise PydanticCustomError("unstorable_text", reason)
    return value


# Any string that may reach the log, a table or a query.
StorableText = Annotated[str, AfterValidator(_text)]


def _searchable(value: str) -> str:
    if not value.strip():  # Unicode whitespace: U+00A0 and U+2003 are blank too
        raise PydanticCustomError("blank_text", "must not be blank")
    return value


# What a search or a question is asked with: storable, and more than whitespace.
QueryText = Annotated[str, AfterValidator(_text), AfterValidator(_searchable)]

# Postgres keeps time zone offsets within +-15:59.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)


def _time(value: datetime) -> datetime:
    offset = value.utcoffset()
    if offset is not None and abs(offset) > MAX_UTC_OFFSET:
        raise PydanticCustomError(
            "unstorable_time", "the time zone offset must be within -15:59 and +15:59"
        )
    return value


# A time that may reach a table: its offset one Postgres can hold.
StorableTime = Annotated[datetime, AfterValidator(_time)]


class _Bad(Exception):
    def __init__(self, path: list[str | int], reason: str) -> None:
        self.path = path
        self.reason = reason


def _walk(value: Any, path: list[str | int], depth: int, max_depth: int) -> int:
    """Check one JSON value; its size in UTF-8 JSON bytes (near enough: quotes and commas)."""
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise _Bad(path, "integers must fit in 64 bits (signed)")
        return 20
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Bad(path, "numbers must be finite (no NaN or Infinity)")
        return 24
    if isinstance(value, str):
        reason = unstorable(value)
        if reason is not None:
            raise _Bad(path, reason)
        return len(value.encode()) + 2
    if depth >= max_depth:
        raise _Bad(path, f"nested deeper than {max_depth} levels")
    if isinstance(value, list | tuple):
        return 2 + sum(_walk(v, [*path, i], depth + 1, max_depth) + 1 for i, v in enumerate(value))
    if isinstance(value, dict):
        size = 2
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Bad(path, "keys must be strings")
            reason = unstorable(key)
            if reason is not None:
                raise _Bad([*path, key], f"key {reason}")
            if len(key) > MAX_KEY_CHARS:
                raise _Bad([*path, key], f"keys must be at most {MAX_KEY_CHARS} characters")
            size += len(key.encode()) + 4 + _walk(item, [*path, key], depth + 1, max_depth)
        return size
    raise _Bad(path, f"{type(value).__name__} is not a JSON value")


def _checked(value: dict[str, Any], max_bytes: int | None, max_depth: int) -> dict[str, Any]:
    try:
        size = _walk(value, [], 0, max_depth)
    except _Bad as bad:
        # ``path`` goes into the context: the one function that names fields from validation
        # errors (``errors.field_of``) appends it to the field's own location.
        raise PydanticCustomError(
            "unstorable_json", "{reason}", {"reason": bad.reason, "path": bad.path}
        ) from None
    if max_bytes is not None and size > max_bytes:
        raise PydanticCustomError(
            "json_too_large", "larger than {limit} bytes of JSON", {"limit": max_bytes}
        )
    return value


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    return _checked(value, MAX_METADATA_BYTES, MAX_JSON_DEPTH)


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    return _checked(value, None, MAX_JSON_DEPTH)


def _stored_json(value: dict[str, Any]) -> dict[str, Any]:
    return _checked(value, None, MAX_STORED_DEPTH)


def written_number(value: int) -> int | float:
    """An integer read back from Postgres's JSON: one beyond 64 bits is the float it was
    written as. Postgres keeps a ``jsonb`` number as ``numeric`` and writes it back without an
    exponent (``1e20`` as 21 digits), and no integer beyond 64 bits is ever stored."""
    return value if INT64_MIN <= value <= INT64_MAX else float(value)


def as_written(value: Any) -> Any:
    """``value`` with every integer in it as ``written_number`` reads it."""
    if isinstance(value, dict):
        return {k: as_written(v) for k, v in value.items()} if value else value
    if isinstance(value, list):
        return [as_written(v) for v in value]
    if isinstance(value, int):  # a bool is one, and within 64 bits
        return written_number(value)
    return value


# JSON read back from a projection's text (``json_build_object(...)::text``), its numbers as
# they were written.
ReadJson = Annotated[dict[str, Any], AfterValidator(as_written)]
# Metadata of workspaces, peers, sessions and messages, as a caller may send it.
Metadata = Annotated[dict[str, Any], AfterValidator(_metadata)]
# A JSON object that only reaches queries (filters): the same rules, no size limit of its own.
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_object)]
# A JSON object in an event: only what the stores cannot hold is refused, not the callers'
# limits on depth and size, so a limit changed later never makes older events unreadable.
StoredJson = Annotated[dict[str, Any], AfterValidator(_stored_json)]
