"""``response_format``: a JSON Schema a chat answer must match, checked where it comes in and
where the answer goes out.

The schema's root is an object (as the Honcho API asks). Only references inside the schema
(``#/...``) are allowed: nothing is ever fetched to resolve one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from pydantic import AfterValidator

from mnemo_schema.text import Metadata


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def check_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` itself if a chat answer can be held to it; ValueError saying why not."""
    if schema.get("type") != "object":
        raise ValueError('must be a JSON Schema whose root "type" is "object"')
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as err:
        where = "/".join(str(p) for p in err.path) or "(root)"
        raise ValueError(f"not a valid JSON Schema at {where}: {err.message}") from None
    foreign = next((r for r in _refs(schema) if not r.startswith("#")), None)
    if foreign is not None:
        raise ValueError(f"$ref {foreign!r} points outside the schema; only '#/...' is allowed")
    return schema


ResponseFormat = Annotated[Metadata, AfterValidator(check_response_format)]
"""A JSON object under the metadata limits (depth, size) that is a usable answer schema."""


def answer_problem(schema: dict[str, Any], content: str) -> str | None:
    """Why ``content`` is not a JSON text matching ``schema``, or None when it is."""
    try:
        value = json.loads(content)
    except ValueError as err:
        return f"not JSON: {err}"
    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {error.message}"
