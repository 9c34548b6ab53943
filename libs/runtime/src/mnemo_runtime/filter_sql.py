"""A parsed filter (``mnemo_schema.filters``) as a parameterised Postgres condition.

Every value goes in as a parameter; only column expressions (the caller's, never the client's)
and the fixed SQL of each operator are text. Every comparison yields true or false, never NULL
(a nullable column is compared under ``COALESCE``, ``ne`` is ``IS DISTINCT FROM``), so ``NOT``
is plain negation and the condition means what the filter says under two-valued logic. Text is
ordered by code point (``COLLATE "C"``), whatever the database's collation.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from psycopg.types.json import Jsonb

from mnemo_schema.filters import All, Any_, Compare, Field, IsNull, Node, Not, parse

_ORDER = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

# The filterable fields' columns in the read models (``messages``, ``observations``).
MESSAGE_COLUMNS = {
    "id": "id",
    "peer_id": "peer_id",
    "session_id": "session_id",
    "metadata": "metadata",
    "created_at": "created_at",
    "token_count": "token_count",
}
CONCLUSION_COLUMNS = {
    "id": "id",
    "observer_id": "observer",
    "observed_id": "observed",
    "session_id": "session_id",
    "level": "level",
    "created_at": "created_at",
    "source_ids": "premise_ids",
    "times_derived": "times_derived",
}


def qualified(columns: Mapping[str, str], alias: str) -> dict[str, str]:
    """``columns`` of the table known as ``alias`` in a query."""
    return {name: f"{alias}.{column}" for name, column in columns.items()}


class _Params:
    """Collects named parameters (``%(f0)s``): a condition may use one several times."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.named: dict[str, Any] = {}

    def __call__(self, value: Any) -> str:
        name = f"{self.prefix}{len(self.named)}"
        self.named[name] = value
        return f"%({name})s"


def to_sql(
    node: Node, columns: Mapping[str, str], fields: Mapping[str, Field], prefix: str = "f"
) -> tuple[str, dict[str, Any]]:
    """The condition and its named parameters (``<prefix><n>``)."""
    params = _Params(prefix)
    return _sql(node, columns, fields, params), params.named


def compile_filters(
    filters: Mapping[str, Any] | None,
    columns: Mapping[str, str],
    fields: Mapping[str, Field],
    prefix: str = "f",
) -> tuple[str, dict[str, Any]]:
    """Parse ``filters`` (a 422 Refusal if invalid) and compile them."""
    return to_sql(parse(filters, fields), columns, fields, prefix)


def _sql(node: Node, columns: Mapping[str, str], fields: Mapping[str, Field], p: _Params) -> str:
    match node:
        case All(parts):
            return (
                "(" + " AND ".join(_sql(x, columns, fields, p) for x in parts) + ")"
                if parts
                else "TRUE"
            )
        case Any_(parts):
            return (
                "(" + " OR ".join(_sql(x, columns, fields, p) for x in parts) + ")"
                if parts
                else "FALSE"
            )
        case Not(part):
            return f"NOT {_sql(part, columns, fields, p)}"
        case IsNull(field=name, path=path):
            column = columns[name]
            if path:
                at = f"({column} #> {p(list(path))})"
                return f"({at} IS NULL OR jsonb_typeof({at}) = 'null')"
            return f"({column} IS NULL)"
        case Compare(field=name, path=path, op=op, value=value):
            field = fields[name]
            if field.kind == "json":
                return _json(columns[name], path, op, value, p)
            if field.kind == "text[]":
                return _array(columns[name], op, value, p)
            sql = _scalar(columns[name], field, op, value, p)
            return f"COALESCE({sql}, false)" if field.nullable and op != "ne" else f"({sql})"
    raise TypeError(f"not a filter node: {node!r}")  # pragma: no cover


def _scalar(column: str, field: Field, op: str, value: Any, p: _Params) -> str:
    text = field.kind == "text"
    if op == "eq":
        return f"{column} = {p(value)}"
    if op == "ne":
        return f"{column} IS DISTINCT FROM {p(value)}"
    if op == "in":
        return f"{column} = ANY({p(list(value))})"
    if op == "contains":
        return f"strpos({column}, {p(value)}) > 0"
    if op == "icontains":
        return f"strpos(lower({column}), lower({p(value)})) > 0"
    ordered = f'{column} COLLATE "C"' if text else column
    return f"{ordered} {_ORDER[op]} {p(value)}"


def _array(column: str, op: str, value: Any, p: _Params) -> str:
    if op in ("eq", "contains"):
        return f"({p(value)} = ANY({column}))"
    if op == "ne":
        return f"(NOT {p(value)} = ANY({column}))"
    return f"({column} && {p(list(value))}::text[])"  # in: any of them


def _nested(path: tuple[str, ...], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _json(column: str, path: tuple[str, ...], op: str, value: Any, p: _Params) -> str:
    if op == "eq":
        return f"({column} @> {p(Jsonb(_nested(path, value)))})"
    if op == "ne":
        return f"(NOT {column} @> {p(Jsonb(_nested(path, value)))})"
    if op == "in":
        docs = [Jsonb(_nested(path, v)) for v in value]
        return f"({column} @> ANY({p(docs)}::jsonb[]))"

    def at() -> str:
        return f"({column} #> {p(list(path))})"

    def text() -> str:
        return f"({column} #>> {p(list(path))})"

    def typed(kind: str, cond: str) -> str:
        return f"(CASE WHEN jsonb_typeof({at()}) = '{kind}' THEN {cond} ELSE false END)"

    if op in _ORDER:
        if isinstance(value, str):
            return typed("string", f'{text()} COLLATE "C" {_ORDER[op]} {p(value)}')
        number = p(Decimal(str(value)))
        return typed("number", f"{at()}::numeric {_ORDER[op]} {number}::numeric")
    if op == "icontains":
        return typed("string", f"strpos(lower({text()}), lower({p(value)})) > 0")
    if isinstance(value, str):
        substring = typed("string", f"strpos({text()}, {p(value)}) > 0")
        return f"({substring} OR {typed('array', f'{at()} @> {p(Jsonb([value]))}')})"
    return typed("array", f"{at()} @> {p(Jsonb([value]))}")
