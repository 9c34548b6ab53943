"""The filter compiler against a plain-Python statement of the language, on real Postgres rows.

Random filters (hypothesis) over messages and conclusions are compiled to SQL and run on rows
in the read models; the ids they select must be exactly those the evaluator selects from
the same rows, read back. The evaluator (``filter_language_model``) reads the raw filter, so
the parser is checked too.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from mnemo_gateway.store import CONCLUSIONS, MESSAGES, Listing
from mnemo_runtime.filter_sql import compile_filters

from .conftest import new_database
from .filter_language_model import OPS, holds

WS = "filters"
BASE = datetime(2024, 3, 1, tzinfo=UTC)

# A small vocabulary, so that random filters often match something (ASCII: case folding is
# then the same in Python and in any database collation).
WORDS = ["al", "Al", "bo", "alice", "bob", "Carol", "x", ""]
KEYS = ["score", "tag", "tags", "name", "n"]
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 12),
    st.sampled_from([0.5, 2.25, -1.5]),
    st.sampled_from(WORDS),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=2)
    ),
    max_leaves=5,
)


# --- random filters ------------------------------------------------------------------------

ID_WORDS = st.sampled_from(["m1", "m2", "alice", "bob", "Carol", "al", "s1", "s2", "o1", "x"])
TIMES = st.integers(-2, 40).map(lambda d: (BASE + timedelta(days=d)).isoformat())


LEVELS = st.sampled_from(["explicit", "deductive", "inductive", "contradiction"])


def _operand(kind: str, op: str, field: str = "") -> st.SearchStrategy[Any]:
    if field == "level":
        return LEVELS
    if kind == "int":
        return st.integers(-1, 60)
    if kind == "time":
        return TIMES
    if kind == "json":
        if op in ("gt", "gte", "lt", "lte"):
            return st.one_of(st.integers(-3, 12), st.sampled_from(WORDS), st.just(1.5))
        return (
            st.sampled_from(WORDS)
            if op == "icontains"
            else json_values.filter(lambda x: x is not None)
        )
    return ID_WORDS


KIND_OPS = {
    "text": OPS,
    "int": ("eq", "ne", "gt", "gte", "lt", "lte", "in"),
    "time": ("eq", "ne", "gt", "gte", "lt", "lte", "in"),
    "text[]": ("eq", "ne", "in", "contains"),
    "json": OPS,
}


@st.composite
def comparison(draw: st.DrawFn, kinds: Mapping[str, str]) -> dict[str, Any]:
    field = draw(st.sampled_from(sorted(kinds)))
    return draw(field_comparison(field, kinds[field]))


@st.composite
def field_comparison(draw: st.DrawFn, field: str, kind: str) -> dict[str, Any]:
    if kind == "json":
        path = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2))
        op = draw(st.sampled_from([*OPS, "plain", "null"]))
        if op == "plain":
            leaf: Any = draw(json_scalars.filter(lambda x: x is not None))
        elif op == "null":
            leaf = draw(st.sampled_from([None, {"eq": None}, {"ne": None}]))
        elif op == "in":
            leaf = {"in": draw(st.lists(_operand("json", "eq"), max_size=3))}
        else:
            leaf = {op: draw(_operand("json", op))}
        for key in reversed(path):
            leaf = {key: leaf}
        return {field: leaf}
    op = draw(st.sampled_from([*KIND_OPS[kind], "plain", "null", "list"]))
    if op == "plain":
        return {field: draw(_operand(kind, "eq", field))}
    if op == "null":
        return {field: draw(st.sampled_from([None, {"ne": None}, {"eq": None}]))}
    if op in ("list", "in"):
        values = draw(st.lists(_operand(kind, "eq", field), max_size=3))
        return {field: values if op == "list" else {"in": values}}
    return {field: {op: draw(_operand(kind, op, field))}}


def filters_of(
    kinds: Mapping[str, str], leaf: st.SearchStrategy[dict[str, Any]] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    return st.recursive(
        comparison(kinds) if leaf is None else leaf,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"AND": xs}),
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"OR": xs}),
            inner.map(lambda x: {"NOT": x}),
            st.tuples(inner, inner).map(lambda ab: {**ab[0], **ab[1]}),
        ),
        max_leaves=6,
    )


# --- the rows --------------------------------------------------------------------------------

MESSAGE_KINDS = {n: f.kind for n, f in MESSAGES.fields.items()}
CONCLUSION_KINDS = {n: f.kind for n, f in CONCLUSIONS.fields.items()}


@pytest.fixture(scope="module")
def rows(pg_admin_url: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    url = new_database(pg_admin_url)
    rnd = random.Random(7)
    docs: list[dict[str, Any]] = [
        {},
        {"score": 5},
        {"score": 11.5, "tag": "alice"},
        {"score": "7"},
        {"tags": ["al", "x"]},
        {"tags": ["bob", 3, True]},
        {"name": "Carol", "n": None},
        {"n": {"score": 2}},
        {"tag": "Alice-al"},
        {"score": -3, "n": [1, 2]},
        {"name": {"tag": "x"}},
        {"n": False},
    ]
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        for i in range(36):
            conn.execute(
                "INSERT INTO messages (workspace, id, session_id, seq, peer_id, content, metadata,"
                " token_count, created_at) VALUES (%s, %s, %s, %s, %s, 'text', %s, %s, %s)",
                (
                    WS,
                    f"m{i}",
                    rnd.choice(["s1", "s2", "x"]),
                    i,
                    rnd.choice(["alice", "bob", "Carol", "al"]),
                    Jsonb(docs[i % len(docs)]),
                    rnd.randint(0, 50),
                    BASE + timedelta(days=rnd.randint(0, 38), hours=i),
                ),
            )
            conn.execute(
                "INSERT INTO observations (workspace, id, observer, observed, session_id, level,"
                " content, content_key, premise_ids, origin, created_at, seq, times_derived)"
                " VALUES (%s, %s, %s, %s, %s, %s, 'c', %s, %s, 'api', %s, %s, %s)",
                (
                    WS,
                    f"o{i}",
                    rnd.choice(["alice", "bob"]),
                    rnd.choice(["alice", "Carol"]),
                    rnd.choice(["s1", "s2", None]),
                    rnd.choice(["explicit", "deductive", "inductive", "contradiction"]),
                    f"k{i}",
                    rnd.sample(["o1", "o2", "m1", "x"], rnd.randint(0, 3)),
                    BASE + timedelta(days=rnd.randint(0, 38)),
                    i,
                    rnd.randint(1, 4),
                ),
            )
        yield conn


def _selected(
    conn: psycopg.Connection[dict[str, Any]], listing: Listing, f: dict[str, Any]
) -> set[str]:
    where, params = compile_filters(f, listing.columns, listing.fields)
    cur = conn.execute(
        f"SELECT id FROM {listing.table} WHERE workspace = %(ws)s AND {where}",
        {"ws": WS, **params},
    )
    return {r["id"] for r in cur.fetchall()}


def _expected(
    conn: psycopg.Connection[dict[str, Any]], listing: Listing, f: dict[str, Any]
) -> set[str]:
    back = {v: k for k, v in listing.columns.items()}
    cur = conn.execute(f"SELECT * FROM {listing.table} WHERE workspace = %s", (WS,))
    kinds = {n: fl.kind for n, fl in listing.fields.items()}
    out = set()
    for r in cur.fetchall():
        row = {back[c]: v for c, v in r.items() if c in back}
        if holds(f, row, kinds):
            out.add(r["id"])
    return out


PROPERTY = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
PER_FIELD = settings(PROPERTY, max_examples=80)


@PER_FIELD
@pytest.mark.parametrize("field", sorted(MESSAGE_KINDS))
@given(data=st.data())
def test_each_message_field(rows, field, data):
    leaf = field_comparison(field, MESSAGE_KINDS[field])
    f = data.draw(st.one_of(leaf, filters_of(MESSAGE_KINDS, leaf)))
    assert _selected(rows, MESSAGES, f) == _expected(rows, MESSAGES, f), json.dumps(f)


@PER_FIELD
@pytest.mark.parametrize("field", sorted(CONCLUSION_KINDS))
@given(data=st.data())
def test_each_conclusion_field(rows, field, data):
    leaf = field_comparison(field, CONCLUSION_KINDS[field])
    f = data.draw(st.one_of(leaf, filters_of(CONCLUSION_KINDS, leaf)))
    assert _selected(rows, CONCLUSIONS, f) == _expected(rows, CONCLUSIONS, f), json.dumps(f)


@PROPERTY
@given(f=filters_of(MESSAGE_KINDS))
def test_message_filters_select_what_the_language_says(rows, f):
    assert _selected(rows, MESSAGES, f) == _expected(rows, MESSAGES, f), json.dumps(f)


@PROPERTY
@given(f=filters_of(CONCLUSION_KINDS))
def test_conclusion_filters_select_what_the_language_says(rows, f):
    assert _selected(rows, CONCLUSIONS, f) == _expected(rows, CONCLUSIONS, f), json.dumps(f)


def test_the_rows_are_varied_enough_to_tell(rows):
    # Filters that must split the rows: a property over rows that all match (or none) proves little.
    for f in (
        {"metadata": {"score": {"gte": 5}}},
        {"id": {"contains": "1"}},
        {"NOT": {"peer_id": "alice"}},
        {"metadata": {"tags": {"contains": "al"}}},
    ):
        got = _selected(rows, MESSAGES, f)
        assert 0 < len(got) < 36, f
        assert got == _expected(rows, MESSAGES, f)
