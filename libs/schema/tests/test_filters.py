"""The filter language: what parses to what, and every refusal names its place."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo_schema.errors import Refusal
from mnemo_schema.filters import (
    CONCLUSION_FIELDS,
    EVERYTHING,
    MESSAGE_FIELDS,
    SESSION_FIELDS,
    All,
    Any_,
    Compare,
    IsNull,
    Not,
    fields_in,
    parse,
)


def test_no_filter_and_wildcards_match_everything() -> None:
    assert parse(None, MESSAGE_FIELDS) == EVERYTHING
    assert parse({}, MESSAGE_FIELDS) == EVERYTHING
    assert parse({"peer_id": "*"}, MESSAGE_FIELDS) == EVERYTHING
    assert parse({"peer_id": ["a", "*"]}, MESSAGE_FIELDS) == EVERYTHING


def test_scalars_lists_operators_and_nulls() -> None:
    assert parse({"peer_id": "a"}, MESSAGE_FIELDS) == Compare("peer_id", (), "eq", "a")
    assert parse({"peer_id": ["a", "b"]}, MESSAGE_FIELDS) == Compare(
        "peer_id", (), "in", ["a", "b"]
    )
    assert parse({"id": {"contains": "al", "icontains": "AL"}}, MESSAGE_FIELDS) == All(
        (Compare("id", (), "contains", "al"), Compare("id", (), "icontains", "AL"))
    )
    assert parse({"session_id": None}, CONCLUSION_FIELDS) == IsNull("session_id")
    assert parse({"session_id": {"ne": None}}, CONCLUSION_FIELDS) == Not(IsNull("session_id"))
    when = parse({"created_at": {"gte": "2024-01-02"}}, MESSAGE_FIELDS)
    assert when == Compare("created_at", (), "gte", datetime(2024, 1, 2, tzinfo=UTC))


def test_metadata_paths() -> None:
    assert parse({"metadata": {"score": {"gte": 5}}}, MESSAGE_FIELDS) == Compare(
        "metadata", ("score",), "gte", 5
    )
    assert parse({"metadata": {"a": {"b": 1}, "c": None}}, MESSAGE_FIELDS) == All(
        (Compare("metadata", ("a", "b"), "eq", 1), IsNull("metadata", ("c",)))
    )


def test_combinators() -> None:
    got = parse({"OR": [{"peer_id": "a"}, {"NOT": {"peer_id": "b"}}]}, MESSAGE_FIELDS)
    assert got == Any_((Compare("peer_id", (), "eq", "a"), Not(Compare("peer_id", (), "eq", "b"))))
    both = parse({"NOT": [{"peer_id": "a"}, {"peer_id": "b"}]}, MESSAGE_FIELDS)
    assert both == All(
        (Not(Compare("peer_id", (), "eq", "a")), Not(Compare("peer_id", (), "eq", "b")))
    )
    assert fields_in(got) == {"peer_id"}


@pytest.mark.parametrize(
    ("filters", "field", "words"),
    [
        ({"colour": "red"}, "filters.colour", "unknown filter field"),
        ({"created_at": {"near": 1}}, "filters.created_at.near", "unknown operator 'near'"),
        ({"metadata": {"score": {"gte": 5, "over": 1}}}, "filters.metadata.score.over", "'over'"),
        ({"AND": []}, "filters.AND", "non-empty list"),
        ({"OR": [{"peer_id": "a"}, {"x": 1}]}, "filters.OR.1.x", "unknown filter field"),
        ({"NOT": [{"peer_id": "a"}, {"x": 1}]}, "filters.NOT.1.x", "unknown filter field"),
        ({"token_count": {"gt": "many"}}, "filters.token_count.gt", "must be a number"),
        ({"token_count": {"contains": 1}}, "filters.token_count.contains", "does not apply"),
        ({"created_at": {"lt": "yesterday"}}, "filters.created_at.lt", "not an ISO 8601 time"),
        ({"is_active": {"gt": True}}, "filters.is_active.gt", "does not apply"),
        ({"is_active": "yes"}, "filters.is_active", "true or false"),
        ({"peer_id": {"in": "a"}}, "filters.peer_id.in", "must be a list"),
        ({"peer_id": {"in": ["a", 3]}}, "filters.peer_id.in.1", "must be a string"),
        ({"metadata": "x"}, "filters.metadata", "must be an object"),
        ({"metadata": {"k": {"gt": True}}}, "filters.metadata.k.gt", "number or a string"),
        ({"metadata": {"k": {"icontains": 1}}}, "filters.metadata.k.icontains", "a string"),
        ({"level": "rumour"}, "filters.level", "must be one of"),
        ({"id": {"gt": None}}, "filters.id.gt", "must be a string"),
    ],
)
def test_refusals_name_the_place(filters: dict[str, object], field: str, words: str) -> None:
    fields = SESSION_FIELDS if "is_active" in filters else MESSAGE_FIELDS
    if "level" in filters:
        fields = CONCLUSION_FIELDS
    with pytest.raises(Refusal) as err:
        parse(filters, fields)
    assert err.value.status == 422
    assert err.value.field == field
    assert err.value.detail.startswith(f"{field}: ") and words in err.value.detail
