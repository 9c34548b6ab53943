"""The filter language stated again in plain Python: which rows a filter selects, read from the
raw filter, for the property tests of the compiler (``test_filter_language``) to compare with
what the compiled SQL selects."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

OPS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "icontains")
MISSING = object()


def _same(a: Any, b: Any) -> bool:
    """JSON equality of two scalars: a boolean is not a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return Decimal(str(a)) == Decimal(str(b))
    return type(a) is type(b) and a == b


def _contains(a: Any, b: Any) -> bool:
    """``a @> b`` for documents below the top level."""
    if isinstance(b, dict):
        return isinstance(a, dict) and all(k in a and _contains(a[k], v) for k, v in b.items())
    if isinstance(b, list):
        return isinstance(a, list) and all(any(_contains(x, y) for x in a) for y in b)
    return not isinstance(a, dict | list) and _same(a, b)


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return MISSING
        doc = doc[key]
    return doc


def _time(value: str) -> datetime:
    t = datetime.fromisoformat(value)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _ordered(a: Any, op: str, b: Any) -> bool:
    return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]


def _json_op(doc: Any, path: tuple[str, ...], op: str, v: Any) -> bool:
    nested: Any = v
    for key in reversed(path):
        nested = {key: nested}
    if op == "eq":
        return _contains(doc, nested)
    if op == "ne":
        return not _contains(doc, nested)
    if op == "in":
        return any(_json_op(doc, path, "eq", x) for x in v)
    here = _at(doc, path)
    if op in ("gt", "gte", "lt", "lte"):
        if isinstance(v, str):
            return isinstance(here, str) and _ordered(here, op, v)
        number = isinstance(here, int | float) and not isinstance(here, bool)
        return number and _ordered(Decimal(str(here)), op, Decimal(str(v)))
    if op == "icontains":
        return isinstance(here, str) and v.lower() in here.lower()
    element = isinstance(here, list) and any(_contains(x, v) for x in here)
    return element or (isinstance(v, str) and isinstance(here, str) and v in here)


def _column_op(value: Any, op: str, v: Any, kind: str) -> bool:
    if kind == "text[]":
        if op in ("eq", "contains"):
            return v in value
        return v not in value if op == "ne" else bool(set(v) & set(value))
    if kind == "time":
        v = [_time(x) for x in v] if op == "in" else _time(v)
    if op == "eq":
        return value is not None and value == v
    if op == "ne":
        return value != v
    if op == "in":
        return value is not None and value in v
    if value is None:
        return False
    if op == "contains":
        return v in value
    if op == "icontains":
        return v.lower() in value.lower()
    return _ordered(value, op, v)


def holds(f: Mapping[str, Any], row: Mapping[str, Any], kinds: Mapping[str, str]) -> bool:
    """Whether ``row`` matches the raw filter ``f``."""
    for key, value in f.items():
        if key == "AND":
            ok = all(holds(x, row, kinds) for x in value)
        elif key == "OR":
            ok = any(holds(x, row, kinds) for x in value)
        elif key == "NOT":
            ok = not any(
                holds(x, row, kinds) for x in (value if isinstance(value, list) else [value])
            )
        elif kinds[key] == "json":
            ok = _json_path(row[key], (), value)
        else:
            ok = _field(row[key], value, kinds[key])
        if not ok:
            return False
    return True


def _field(value: Any, f: Any, kind: str) -> bool:
    if f is None:
        return value is None
    if f == "*":
        return True
    if isinstance(f, list):
        return "*" in f or _column_op(value, "in", f, kind)
    if isinstance(f, dict):
        for op, v in f.items():
            if v == "*" or (op == "in" and "*" in v):
                continue
            if v is None:
                if (value is None) != (op == "eq"):
                    return False
            elif not _column_op(value, op, v, kind):
                return False
        return True
    return _column_op(value, "eq", f, kind)


def _json_path(doc: Any, path: tuple[str, ...], f: dict[str, Any]) -> bool:
    for key, v in f.items():
        here = (*path, key)
        if isinstance(v, dict) and any(k in OPS for k in v):
            for op, operand in v.items():
                if operand is None:
                    null = _at(doc, here) in (MISSING, None)
                    ok = null if op == "eq" else not null
                else:
                    ok = _json_op(doc, here, op, operand)
                if not ok:
                    return False
        elif isinstance(v, dict) and v:
            if not _json_path(doc, here, v):
                return False
        elif v is None:
            if _at(doc, here) not in (MISSING, None):
                return False
        elif not _json_op(doc, here, "eq", v):
            return False
    return True
