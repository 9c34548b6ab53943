"""The Honcho filter language: what a ``filters`` object may say, parsed into a small tree.

A filter is a JSON object. Its keys are ``AND`` / ``OR`` (lists of filters), ``NOT`` (a filter,
or a list of filters each negated) and field names; the entries of one object all hold. A
field's value is

- a scalar: equality (``{"peer_id": "alice"}``); ``"*"`` matches everything; ``null`` is a null
  check (``{"session_id": null}``); a list is ``in`` (``{"peer_id": ["a", "b"]}``);
- an object of operators, all of which hold: ``eq``, ``ne``, ``gt``, ``gte``, ``lt``, ``lte``,
  ``in``, ``contains``, ``icontains`` (``{"created_at": {"gte": "2024-01-01"}}``);
  ``{"ne": null}`` is a not-null check.

``metadata`` takes a path: ``{"metadata": {"score": {"gte": 5}}}``, ``{"metadata": {"a": {"b":
1}}}``. An object under a path holding any operator is a comparison there; one holding none goes
one level deeper. Equality at a path is JSON containment (``{"tags": ["x"]}`` matches tags that
include ``"x"``); ``gt``.. compare numbers with numbers and strings with strings (a value of
another type does not match); ``contains`` finds a substring of a string or an element of an
array, ``icontains`` a substring ignoring case.

Anything else is refused with a 422 naming the place (``filters.OR.1.created_at.near: unknown
operator 'near'``): an unknown field or operator, an operand of the wrong type, an operator that
does not apply to the field. Parsing never touches a store; ``mnemo_runtime.filter_sql`` turns
the tree into parameterised SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from mnemo_schema.errors import Refusal
from mnemo_schema.text import MAX_JSON_DEPTH

Kind = Literal["text", "int", "time", "bool", "json", "text[]"]
Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "icontains"]
OPERATORS: tuple[Op, ...] = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "icontains")
_ORDERED = frozenset({"gt", "gte", "lt", "lte"})
_BY_KIND: dict[Kind, frozenset[str]] = {
    "text": frozenset(OPERATORS),
    "int": frozenset({"eq", "ne", "in", *_ORDERED}),
    "time": frozenset({"eq", "ne", "in", *_ORDERED}),
    "bool": frozenset({"eq", "ne", "in"}),
    "text[]": frozenset({"eq", "ne", "in", "contains"}),
    "json": frozenset(OPERATORS),
}
WILDCARD = "*"


@dataclass(frozen=True)
class Field:
    """A filterable field: its kind, whether it may be null, and the values it may take."""

    kind: Kind
    nullable: bool = False
    values: frozenset[str] | None = None


_LEVELS = frozenset({"explicit", "deductive", "inductive", "contradiction"})
WORKSPACE_FIELDS: dict[str, Field] = {
    "id": Field("text"),
    "metadata": Field("json"),
    "created_at": Field("time"),
}
PEER_FIELDS = WORKSPACE_FIELDS
SESSION_FIELDS: dict[str, Field] = {**WORKSPACE_FIELDS, "is_active": Field("bool")}
MESSAGE_FIELDS: dict[str, Field] = {
    "id": Field("text"),
    "peer_id": Field("text"),
    "session_id": Field("text"),
    "metadata": Field("json"),
    "created_at": Field("time"),
    "token_count": Field("int"),
}
CONCLUSION_FIELDS: dict[str, Field] = {
    "id": Field("text"),
    "observer_id": Field("text"),
    "observed_id": Field("text"),
    "session_id": Field("text", nullable=True),
    "level": Field("text", values=_LEVELS),
    "created_at": Field("time"),
    "source_ids": Field("text[]"),
    "times_derived": Field("int"),
}


@dataclass(frozen=True)
class All:
    """Every part holds (an empty one: everything matches)."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Any_:
    """At least one part holds."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """The part does not hold."""

    part: Node


@dataclass(frozen=True)
class Compare:
    """``field`` (at ``path`` inside a JSON field) ``op`` ``value``.

    ``value`` is typed for the field: a ``datetime`` for times, a list for ``in``.
    """

    field: str
    path: tuple[str, ...]
    op: Op
    value: Any


@dataclass(frozen=True)
class IsNull:
    """``field`` (at ``path``) is null or, in a JSON field, absent."""

    field: str
    path: tuple[str, ...] = ()


Node = All | Any_ | Not | Compare | IsNull
EVERYTHING = All(())


def parse(filters: Mapping[str, Any] | None, fields: Mapping[str, Field]) -> Node:
    """The tree of ``filters`` over ``fields``; a 422 Refusal naming what is wrong."""
    if filters is None:
        return EVERYTHING
    return _object(filters, fields, "filters", 0)


def _bad(where: str, detail: str) -> Refusal:
    return Refusal(422, f"{where}: {detail}", where)


def _object(f: Any, fields: Mapping[str, Field], where: str, depth: int) -> Node:
    if not isinstance(f, Mapping):
        raise _bad(where, "must be an object")
    if depth > MAX_JSON_DEPTH:
        raise _bad(where, f"nested deeper than {MAX_JSON_DEPTH} levels")
    parts: list[Node] = []
    for key, value in f.items():
        at = f"{where}.{key}"
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise _bad(at, "must be a non-empty list of filters")
            subs = tuple(_object(v, fields, f"{at}.{i}", depth + 1) for i, v in enumerate(value))
            parts.append(All(subs) if key == "AND" else Any_(subs))
        elif key == "NOT":
            negated = value if isinstance(value, list) else [value]
            if not negated:
                raise _bad(at, "must be a filter or a non-empty list of filters")
            for i, v in enumerate(negated):
                sub_at = f"{at}.{i}" if isinstance(value, list) else at
                parts.append(Not(_object(v, fields, sub_at, depth + 1)))
        elif key in fields:
            parts.append(_field(key, fields[key], value, at, depth))
        else:
            allowed = ", ".join(sorted([*fields, "AND", "OR", "NOT"]))
            raise _bad(at, f"unknown filter field (allowed: {allowed})")
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _field(name: str, field: Field, value: Any, where: str, depth: int) -> Node:
    if field.kind == "json":
        if not isinstance(value, Mapping):
            raise _bad(where, "must be an object of keys (and operators)")
        return _path(name, (), value, where, depth + 1)
    if value is None:
        return IsNull(name)
    if isinstance(value, list):
        return _compare(name, field, (), "in", value, where)
    if isinstance(value, Mapping):
        return _operators(name, field, (), value, where)
    if value == WILDCARD and field.kind != "text[]":
        return EVERYTHING
    return _compare(name, field, (), "eq", value, where)


def _path(name: str, path: tuple[str, ...], obj: Mapping[str, Any], where: str, depth: int) -> Node:
    if depth > MAX_JSON_DEPTH:
        raise _bad(where, f"nested deeper than {MAX_JSON_DEPTH} levels")
    parts: list[Node] = []
    json_field = Field("json")
    for key, value in obj.items():
        at, here = f"{where}.{key}", (*path, key)
        if isinstance(value, Mapping) and any(k in OPERATORS for k in value):
            parts.append(_operators(name, json_field, here, value, at))
        elif isinstance(value, Mapping) and value:
            parts.append(_path(name, here, value, at, depth + 1))
        elif value is None:
            parts.append(IsNull(name, here))
        else:
            parts.append(Compare(name, here, "eq", value))
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _operators(
    name: str, field: Field, path: tuple[str, ...], ops: Mapping[str, Any], where: str
) -> Node:
    parts: list[Node] = []
    for op, operand in ops.items():
        at = f"{where}.{op}"
        if op not in OPERATORS:
            raise _bad(at, f"unknown operator {op!r} (operators: {', '.join(OPERATORS)})")
        if operand is None and op in ("eq", "ne"):
            null: Node = IsNull(name, path)
            parts.append(null if op == "eq" else Not(null))
            continue
        if operand == WILDCARD and field.kind != "json":
            continue
        parts.append(_compare(name, field, path, op, operand, at))
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _compare(
    name: str, field: Field, path: tuple[str, ...], op: Op, operand: Any, where: str
) -> Node:
    if op not in _BY_KIND[field.kind]:
        raise _bad(where, f"operator {op!r} does not apply to {name} ({field.kind})")
    if op == "in":
        if not isinstance(operand, list):
            raise _bad(where, "must be a list")
        if field.kind != "json" and WILDCARD in operand:
            return EVERYTHING
        values = [_operand(field, v, f"{where}.{i}", "eq") for i, v in enumerate(operand)]
        return Compare(name, path, "in", values)
    return Compare(name, path, op, _operand(field, operand, where, op))


def _operand(field: Field, value: Any, where: str, op: str) -> Any:
    """``value`` checked (and typed) for a comparison with ``field``."""
    kind = field.kind
    if kind == "json":
        return _json_operand(value, where, op)
    if kind in ("text", "text[]"):
        if not isinstance(value, str):
            raise _bad(where, f"must be a string, not {_type(value)}")
        if field.values is not None and op in ("eq", "ne") and value not in field.values:
            raise _bad(where, f"must be one of {sorted(field.values)}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _bad(where, f"must be a number, not {_type(value)}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _bad(where, f"must be true or false, not {_type(value)}")
        return value
    return _time(value, where)


def _json_operand(value: Any, where: str, op: str) -> Any:
    if op in _ORDERED:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise _bad(where, f"must be a number or a string, not {_type(value)}")
    elif op == "icontains" and not isinstance(value, str):
        raise _bad(where, f"must be a string, not {_type(value)}")
    elif value is None:
        raise _bad(where, f"{op} takes a value; use null on its own for a null check")
    return value


def _time(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise _bad(where, f"must be an ISO 8601 time, not {_type(value)}")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise _bad(where, f"{value!r} is not an ISO 8601 time") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _type(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), "a value")


def fields_in(node: Node) -> frozenset[str]:
    """The fields a tree compares."""
    match node:
        case All(parts) | Any_(parts):
            return frozenset().union(*(fields_in(p) for p in parts))
        case Not(part):
            return fields_in(part)
        case Compare(field=f) | IsNull(field=f):
            return frozenset({f})
    return frozenset()  # pragma: no cover - every node kind is matched above
