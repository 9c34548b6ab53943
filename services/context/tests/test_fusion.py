"""Weighted reciprocal-rank fusion and the boosts a question's understanding earns."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from mnemo_context.fusion import Facts, Weights, boost, fuse, ranked, spread
from mnemo_context.understanding import Understanding, Window

MAY = datetime(2023, 5, 7, tzinfo=UTC)
JUNE = datetime(2023, 6, 7, tzinfo=UTC)
EVEN = Weights(lists={"lexical": 1.0, "dense": 1.0}, named=1.0, window=1.0, current=1.0)
NOTHING = Understanding(frozenset(), (), False)


def test_items_both_lists_agree_on_come_first_and_a_repeat_counts_once() -> None:
    scores, found = fuse({"lexical": ["a", "b", "c", "a"], "dense": ["b", "c"]}, EVEN)
    assert ranked(scores) == ["b", "c", "a"]
    assert found["b"] == ["lexical", "dense"] and found["a"] == ["lexical"]
    assert scores["a"] == 1 / (EVEN.k + 1)


def test_a_list_weighs_by_its_weight_and_a_zero_weight_list_is_ignored() -> None:
    heavy = Weights(lists={"lexical": 1.0, "dense": 3.0})
    assert ranked(fuse({"lexical": ["a", "b"], "dense": ["b", "a"]}, heavy)[0]) == ["b", "a"]
    off = Weights(lists={"lexical": 1.0, "dense": 0.0})
    scores, found = fuse({"lexical": ["a"], "dense": ["z"]}, off)
    assert list(scores) == ["a"] and "z" not in found
    assert fuse({}, EVEN) == ({}, {})


def test_ties_keep_the_given_order() -> None:
    assert ranked({"x": 1.0, "y": 1.0, "z": 2.0}, order=["y", "x"]) == ["z", "y", "x"]


def test_boosts_lift_the_named_peer_the_window_and_for_now_the_newer() -> None:
    scores = {"old": 1.0, "new": 1.0, "bob": 1.0}
    facts = {
        "old": Facts("alice", MAY),
        "new": Facts("alice", JUNE),
        "bob": Facts("bob", JUNE),
    }
    named = boost(scores, facts, Understanding(frozenset({"alice"}), (), False), EVEN)
    assert named == {"old": 2.0, "new": 2.0, "bob": 1.0}
    may = Window(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))
    in_may = boost(scores, facts, Understanding(frozenset(), (may,), False), EVEN)
    assert in_may["old"] == 2.0 and in_may["new"] == in_may["bob"] == 1.0
    now = boost(scores, facts, Understanding(frozenset(), (), True), EVEN)
    assert now["old"] < now["new"]
    assert boost(scores, facts, NOTHING, EVEN) == scores
    # Candidates with no known time or peer are left as they were.
    assert boost({"x": 1.0}, {}, Understanding(frozenset({"alice"}), (may,), True), EVEN) == {
        "x": 1.0
    }


def test_spreading_lets_a_new_source_pass_a_second_reading_of_one_already_taken() -> None:
    scores = {"a1": 1.0, "a2": 0.9, "a3": 0.8, "b1": 0.5, "c1": 0.2}
    sources = {"a1": ["a"], "a2": ["a"], "a3": ["a"], "b1": ["b"], "c1": ["c"]}
    order = ranked(scores)

    assert spread(order, scores, sources, 1.0) == order
    # a2 falls to 0.45, behind b1; a3 to 0.2 (two of "a" taken), level with c1: the earlier
    # place wins.
    assert spread(order, scores, sources, 0.5) == ["a1", "b1", "a2", "a3", "c1"]
    assert spread(order, scores, sources, 0.0) == ["a1", "b1", "c1", "a2", "a3"]


def test_spreading_counts_the_most_shared_source_and_keeps_what_has_none() -> None:
    scores = {"ab": 1.0, "b": 0.9, "x": 0.8}
    sources = {"ab": ["a", "b"], "b": ["b"]}

    assert spread(ranked(scores), scores, sources, 0.5) == ["ab", "x", "b"]
    assert spread([], {}, {}, 0.5) == []


def test_spreading_only_the_head_needed_ranks_that_head_as_the_whole_does() -> None:
    rng = random.Random(11)
    for _ in range(300):
        items = [f"i{n}" for n in range(rng.randint(0, 40))]
        scores = {i: rng.random() for i in items}
        sources = {i: rng.sample("abcdefg", rng.randint(0, 3)) for i in items}
        order = ranked(scores)
        decay = rng.choice([0.0, 0.1, 0.5, 1.0])
        whole = spread(order, scores, sources, decay)
        kept = {i for i in items if rng.random() < 0.7}
        needed = rng.randint(0, 45)
        head = spread(order, scores, sources, decay, needed=needed, counts=kept.__contains__)
        assert head == whole[: len(head)]
        assert [i for i in head if i in kept] == [i for i in whole if i in kept][:needed]
