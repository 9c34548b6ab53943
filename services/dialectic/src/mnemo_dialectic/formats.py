"""The local reasoner's structured answers: a JSON Schema filled from an extractive answer.

Strings get the answer (or, for an enum, the value sharing most words with it), booleans
whether anything was found, numbers the first number in the answer, arrays of strings the
answer's sentences; objects are filled property by property, local ``$ref``s followed. What a
schema asks beyond this (patterns, formats) is left to ``answer_problem``, which the dialectic
checks every answer against.
"""

from __future__ import annotations

import json
import re
from typing import Any

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+")


def fill(schema: dict[str, Any], answer: str, found: bool) -> str:
    """A JSON text of ``schema``'s shape holding ``answer``."""
    return json.dumps(_value(schema, schema, answer, found, 0), ensure_ascii=False)


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(node.get("$ref"), str) and seen < 32:
        target: Any = root
        for part in node["$ref"].lstrip("#").strip("/").split("/"):
            if part:
                target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
        node = target if isinstance(target, dict) else {}
        seen += 1
    return node


def _type_of(node: dict[str, Any]) -> str | None:
    kind = node.get("type")
    if isinstance(kind, list):
        return next((k for k in kind if k != "null"), kind[0] if kind else None)
    return kind if isinstance(kind, str) else None


def _value(root: dict[str, Any], node: dict[str, Any], answer: str, found: bool, depth: int) -> Any:
    node = _resolve(root, node)
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and node["enum"]:
        return _closest(node["enum"], answer)
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in node.get(key, []) if isinstance(o, dict)]
        usable = [o for o in options if _type_of(_resolve(root, o)) != "null"] or options
        if usable:
            return _value(root, {**usable[0], **_rest(node, key)}, answer, found, depth)
    kind = _type_of(node) or ("object" if "properties" in node else "string")
    if depth > 8:
        return None
    if kind == "object":
        props = node.get("properties", {})
        return {
            name: _value(root, sub, answer, found, depth + 1)
            for name, sub in props.items()
            if isinstance(sub, dict)
        }
    if kind == "array":
        raw = node.get("items")
        items: dict[str, Any] = raw if isinstance(raw, dict) else {}
        item_kind = _type_of(_resolve(root, items)) or "string"
        if item_kind == "string" and "enum" not in _resolve(root, items):
            parts = [p for p in _SENTENCE.split(answer) if p] if found else []
            values: list[Any] = parts
        else:
            values = [_value(root, items, answer, found, depth + 1)] if found else []
        low = int(node.get("minItems", 0))
        while len(values) < low:
            values.append(_value(root, items, answer, found, depth + 1))
        high = node.get("maxItems")
        return values[: int(high)] if isinstance(high, int) else values
    if kind == "boolean":
        return found
    if kind in ("integer", "number"):
        number = next(iter(_NUMBER.findall(answer)), None) if found else None
        value: float = float(number) if number is not None else float(node.get("minimum", 0))
        return int(value) if kind == "integer" else value
    if kind == "null":
        return None
    text = answer
    high = node.get("maxLength")
    return text[: int(high)] if isinstance(high, int) else text


def _rest(node: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k != key}


def _closest(options: list[Any], answer: str) -> Any:
    words = set(_WORD.findall(answer.lower()))
    return max(options, key=lambda o: len(words & set(_WORD.findall(str(o).lower()))))
