"""Translate the SDK's ``filters`` objects into parameterised SQL, refusing unknown fields.

Supported: ``{"field": value}`` equality, a list for IN, an operator dict
(``gt gte lt lte ne in``, ``contains`` for arrays), ``{"metadata": {...}}`` JSON containment, and ``AND`` / ``OR`` / ``NOT``
over lists of filters. Columns are whitelisted per resource.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

_OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "ne": "<>"}


class FilterError(ValueError):
    """A filter that cannot be translated; ``field`` is the dotted path at fault."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field


def to_sql(filters: dict[str, Any] | None, columns: dict[str, str]) -> tuple[str, list[Any]]:
    """A SQL boolean expression and its parameters (``TRUE`` for no filters)."""
    if not filters:
        return "TRUE", []
    params: list[Any] = []
    return _expr(filters, columns, params, "filters"), params


def _expr(f: Any, columns: dict[str, str], params: list[Any], path: str) -> str:
    if not isinstance(f, dict):
        raise FilterError(path, "must be an object")
    parts = []
    for key, value in f.items():
        where = f"{path}.{key}"
        if key in ("AND", "OR"):
            if not isinstance(value, list) or not value:
                raise FilterError(where, "must be a non-empty list of filters")
            subs = [_expr(v, columns, params, f"{where}.{i}") for i, v in enumerate(value)]
            parts.append("(" + f" {key} ".join(subs) + ")")
        elif key == "NOT":
            parts.append(f"NOT ({_expr(value, columns, params, where)})")
        elif key == "metadata" and "metadata" in columns:
            if not isinstance(value, dict):
                raise FilterError(where, "must be an object")
            params.append(Jsonb(value))
            parts.append(f"{columns['metadata']} @> %s")
        elif key in columns:
            parts.append(_compare(columns[key], value, params, where))
        else:
            allowed = ", ".join(sorted([*columns, "AND", "OR", "NOT"]))
            raise FilterError(where, f"unknown filter field (allowed: {allowed})")
    return " AND ".join(parts) if parts else "TRUE"


def _compare(column: str, value: Any, params: list[Any], where: str) -> str:
    if isinstance(value, list):
        params.append(value)
        return f"{column} = ANY(%s)"
    if isinstance(value, dict):
        out = []
        for op, operand in value.items():
            if op == "contains":
                params.append(operand)
                out.append(f"%s = ANY({column})")
            elif op == "in":
                if not isinstance(operand, list):
                    raise FilterError(f"{where}.in", "must be a list")
                params.append(operand)
                out.append(f"{column} = ANY(%s)")
            elif op in _OPS:
                params.append(operand)
                out.append(f"{column} {_OPS[op]} %s")
            else:
                raise FilterError(f"{where}.{op}", "unknown operator")
        return " AND ".join(out) if out else "TRUE"
    if value == "*":
        return "TRUE"
    params.append(value)
    return f"{column} = %s"
