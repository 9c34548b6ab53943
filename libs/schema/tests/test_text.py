"""The storability rules, against a plain statement of them, on arbitrary Unicode and JSON."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from mnemo_schema.errors import refusal
from mnemo_schema.text import (
    INT64_MAX,
    INT64_MIN,
    MAX_JSON_DEPTH,
    MAX_KEY_CHARS,
    MAX_METADATA_BYTES,
    Metadata,
    ReadJson,
    StorableText,
    StoredJson,
    unstorable,
)

# Every code point, surrogates included (the default alphabet leaves them out).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
ANY_TEXT = st.text(alphabet=ANY_CHAR, max_size=40)


def storable_by_definition(text: str) -> bool:
    return "\x00" not in text and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


class Holder(BaseModel):
    text: StorableText | None = None
    metadata: Metadata | None = None
    stored: StoredJson | None = None


@given(ANY_TEXT)
def test_text_is_refused_exactly_when_it_holds_nul_or_a_lone_surrogate(text):
    assert (unstorable(text) is None) == storable_by_definition(text)
    if storable_by_definition(text):
        assert Holder(text=text).text == text  # kept as sent, never normalised
        text.encode("utf-8")  # and encodable, which every store needs
    else:
        with pytest.raises(ValidationError) as err:
            Holder(text=text)
        assert refusal(err.value).field == "text"


def test_the_reason_names_the_character_and_where_it_is():
    assert unstorable("hello\x00world") == (
        "contains NUL (U+0000) at index 5, which cannot be stored"
    )
    assert "lone surrogate (U+D800) at index 1" in (unstorable("a\ud800") or "")
    assert unstorable("tab\tnewline\ncontrol\x01\ufffe") is None


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | ANY_TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet=ANY_CHAR, max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


def first_problem(value: Any, path: list[Any], depth: int, max_depth: int) -> list[Any] | None:
    """Where the rules say ``value`` is bad (the path), or None: a second statement of them."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if INT64_MIN <= value <= INT64_MAX else path
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, str):
        return None if storable_by_definition(value) else path
    if depth >= max_depth:
        return path
    items = enumerate(value) if isinstance(value, list) else value.items()
    for key, item in items:
        if isinstance(key, str) and (not storable_by_definition(key) or len(key) > MAX_KEY_CHARS):
            return [*path, key]
        found = first_problem(item, [*path, key], depth + 1, max_depth)
        if found is not None:
            return found
    return None


@settings(max_examples=400)
@given(st.dictionaries(st.text(alphabet=ANY_CHAR, max_size=8), JSON, max_size=4))
def test_json_objects_are_refused_exactly_where_the_rules_say(value):
    problem = first_problem(value, [], 0, MAX_JSON_DEPTH)
    if problem is None:
        assert Holder(metadata=value).metadata == value
        return
    with pytest.raises(ValidationError) as err:
        Holder(metadata=value)
    assert refusal(err.value).field == ".".join(["metadata", *map(str, problem)])


def test_metadata_has_a_depth_and_a_size_limit_that_events_do_not():
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(MAX_JSON_DEPTH):
        node["d"] = {}
        node = node["d"]
    with pytest.raises(ValidationError) as err:
        Holder(metadata=deep)
    assert "nested deeper than" in refusal(err.value).detail
    assert Holder(stored=deep).stored == deep  # an event with it stays readable

    big = {"k": "x" * MAX_METADATA_BYTES}
    with pytest.raises(ValidationError) as err:
        Holder(metadata=big)
    assert refusal(err.value).field == "metadata"
    assert Holder(stored=big).stored == big


def test_numbers_the_projections_cannot_encode_are_refused_with_their_path():
    for bad in (float("nan"), float("inf"), 2**63, -(2**63) - 1):
        with pytest.raises(ValidationError) as err:
            Holder(metadata={"a": [1, {"b": bad}]})
        assert refusal(err.value).field == "metadata.a.1.b"
    assert Holder(metadata={"a": INT64_MAX, "b": INT64_MIN, "c": 1.5e300}).metadata


def _as_postgres_writes_it(value: Any) -> str:
    """JSON text as Postgres writes a jsonb back: each number as numeric, without exponent."""
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{json.dumps(k)}:{_as_postgres_writes_it(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(_as_postgres_writes_it(v) for v in value) + "]"
    if isinstance(value, float):
        return format(Decimal(repr(value)), "f")
    return json.dumps(value)


NUMBERS = st.integers(INT64_MIN, INT64_MAX) | st.floats(allow_nan=False, allow_infinity=False)
KEYS = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=5)
READ_BACK = st.dictionaries(
    KEYS,
    st.recursive(
        st.none() | st.booleans() | NUMBERS | KEYS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner),
        max_leaves=12,
    ),
    max_size=5,
)


def _same_number(got: Any, value: Any) -> bool:
    """The same JSON: a float read back as the same double (an integral one that fits 64 bits
    may come back as an integer of its digits), an integer as itself."""
    if isinstance(value, dict):
        return got.keys() == value.keys() and all(_same_number(got[k], v) for k, v in value.items())
    if isinstance(value, list):
        return len(got) == len(value) and all(map(_same_number, got, value))
    if isinstance(value, float):
        return isinstance(got, int | float) and float(got) == value
    return type(got) is type(value) and got == value


class Read(BaseModel):
    metadata: ReadJson


@given(READ_BACK)
@settings(max_examples=300, deadline=None)
def test_json_read_back_from_postgres_has_the_numbers_that_were_written(value):
    text = _as_postgres_writes_it(value)
    got = Read.model_validate_json('{"metadata": ' + text + "}").metadata
    assert _same_number(got, value)
    assert Holder(metadata=got).metadata == got  # and may be sent again


def test_a_field_named_like_a_request_part_keeps_its_name():
    from mnemo_schema.errors import field_of

    assert field_of({"loc": ("body", "query")}) == "query"
    assert field_of({"loc": ("query", "search_query")}) == "search_query"
    assert field_of(
        {"loc": ("post_messages", "messages", 0, "content")}, skip={"post_messages"}
    ) == ("messages.0.content")


def test_a_value_validated_on_its_own_is_refused_under_the_field_it_came_in():
    with pytest.raises(ValidationError) as err:
        TypeAdapter(dict[str, int]).validate_python({"a": "x"})
    named = refusal(err.value, at="metadata")
    assert (named.status, named.field) == (422, "metadata.a")
    assert named.detail.startswith("metadata.a: ")
    with pytest.raises(ValidationError) as err:
        TypeAdapter(int).validate_python("x")
    assert refusal(err.value, at="seq").field == "seq"
    assert refusal(err.value).field == "body"
