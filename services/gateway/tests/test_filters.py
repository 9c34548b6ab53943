"""SDK filter objects -> SQL."""

from __future__ import annotations

import pytest

from mnemo_gateway.filters import FilterError, to_sql

COLS = {"peer_id": "peer_id", "metadata": "metadata", "created_at": "created_at"}


def test_no_filters_is_true():
    assert to_sql(None, COLS) == ("TRUE", [])


def test_equality_lists_operators_and_metadata():
    sql, params = to_sql(
        {"peer_id": ["a", "b"], "created_at": {"gte": "2024-01-01"}, "metadata": {"k": 1}}, COLS
    )
    assert sql == "peer_id = ANY(%s) AND created_at >= %s AND metadata @> %s"
    assert params[:2] == [["a", "b"], "2024-01-01"]


def test_boolean_combinators():
    sql, params = to_sql({"OR": [{"peer_id": "a"}, {"NOT": {"peer_id": "b"}}]}, COLS)
    assert sql == "(peer_id = %s OR NOT (peer_id = %s))"
    assert params == ["a", "b"]


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"colour": "red"}, "filters.colour"),
        ({"created_at": {"near": 1}}, "filters.created_at.near"),
        ({"AND": []}, "filters.AND"),
        ({"OR": [{"peer_id": "a"}, {"x": 1}]}, "filters.OR.1.x"),
    ],
)
def test_unknown_fields_are_named(filters, field):
    with pytest.raises(FilterError) as err:
        to_sql(filters, COLS)
    assert err.value.field == field
