"""What the edge accepts, Postgres holds: accepted text and JSON round-trip through real columns,
and the text the edge refuses is text Postgres refuses too."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ValidationError

from mnemo_schema.text import Metadata, StorableText, unstorable

ANY_CHAR = st.characters(codec=None, exclude_categories=())
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=ANY_CHAR, max_size=30)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet=ANY_CHAR, max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


class Row(BaseModel):
    text: StorableText
    metadata: Metadata


@pytest.fixture(scope="module")
def conn(database_url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(database_url, autocommit=True) as c:
        c.execute("CREATE TEMP TABLE storable (t text, j jsonb)")
        yield c


@settings(max_examples=250, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=ANY_CHAR, max_size=30), st.dictionaries(st.text(max_size=6), JSON))
def test_what_the_edge_accepts_postgres_holds(conn, text, metadata):
    try:
        row = Row(text=text, metadata=metadata)
    except ValidationError:
        return
    got = conn.execute(
        "INSERT INTO storable VALUES (%s, %s) RETURNING t, j", (row.text, Jsonb(row.metadata))
    ).fetchone()
    assert got is not None
    assert got[0] == text
    assert same_json(got[1], metadata)


def same_json(a: object, b: object) -> bool:
    """Equal as JSON: jsonb keeps numbers as decimals, so 2.489166762137997e+16 comes back as
    the integer 24891667621379970, which is that decimal, not the float's binary value."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=ANY_CHAR, min_size=1, max_size=30))
def test_what_the_edge_refuses_postgres_cannot_hold(conn, text):
    if unstorable(text) is None:
        return
    with pytest.raises((psycopg.DataError, UnicodeEncodeError, ValueError)):
        conn.execute("SELECT %s::text", (text,))
