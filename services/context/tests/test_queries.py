"""The query models: defaults, bounds, and the keys a representation read needs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mnemo_schema.context_queries import (
    DEFAULT_CONTEXT_TOKENS,
    MAX_CONTEXT_TOKENS,
    ContextQuery,
    RepresentationQuery,
    SearchQuery,
)
from mnemo_schema.retrieval import COMPONENTS, RetrievalQuery


def test_context_defaults():
    q = ContextQuery(session_id="s")
    assert q.tokens == DEFAULT_CONTEXT_TOKENS and q.summary and q.observer is None


def test_a_target_alone_reads_its_own_model():
    q = ContextQuery(session_id="s", peer_target="bob")
    assert (q.observer, q.peer_target) == ("bob", "bob")
    q = ContextQuery(session_id="s", peer_target="bob", peer_perspective="alice")
    assert (q.observer, q.peer_target) == ("alice", "bob")


def test_a_perspective_without_a_target_is_refused():
    with pytest.raises(ValidationError, match="peer_perspective"):
        ContextQuery(session_id="s", peer_perspective="alice")


@pytest.mark.parametrize("tokens", [-1, MAX_CONTEXT_TOKENS + 1])
def test_budgets_out_of_bounds_are_refused(tokens):
    with pytest.raises(ValidationError, match="tokens"):
        ContextQuery(session_id="s", tokens=tokens)


def test_a_representation_read_needs_both_keys():
    with pytest.raises(ValidationError):
        RepresentationQuery.model_validate({"observer": "alice"})
    with pytest.raises(ValidationError):
        RepresentationQuery(observer="alice", observed="")


def test_queries_round_trip_and_refuse_unknown_fields():
    q = ContextQuery(
        session_id="s", peer_target="b", slice={"search_query": "x", "search_top_k": 3}
    )
    assert ContextQuery.model_validate_json(q.model_dump_json()) == q
    with pytest.raises(ValidationError):
        SearchQuery.model_validate({"query": "x", "everything": True})
    with pytest.raises(ValidationError):
        SearchQuery(query="x", limit=101)


def test_each_query_type_has_its_own_subject_kind():
    kinds = {ContextQuery.KIND, RepresentationQuery.KIND, SearchQuery.KIND}
    assert len(kinds) == 3


def test_a_retrieval_query_names_a_whole_representation_or_none():
    assert RetrievalQuery(query="q", observer="a", observed="b").in_representation
    assert not RetrievalQuery(query="q").in_representation
    for half in ({"observer": "a"}, {"observed": "b"}):
        with pytest.raises(ValidationError, match="go together"):
            RetrievalQuery(query="q", **half)
    for bad in (
        {"query": "  "},
        {"query": ""},
        {"query": "q", "messages": 101},
        {"query": "q", "without": ["magic"]},
    ):
        with pytest.raises(ValidationError):
            RetrievalQuery(**bad)
    every = RetrievalQuery(query="q", without=frozenset(COMPONENTS))
    assert RetrievalQuery.model_validate_json(every.model_dump_json()) == every
