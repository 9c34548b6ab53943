"""Knowledge updates of counts and measures in the local heuristic dream."""

from __future__ import annotations

from mnemo_dreamer.quantities import quantity_updates

OLD = (
    "a",
    "explicit",
    "2024-04-20",
    1,
    "User pushed the release with 150 commits and 12 branches merged.",
)
NEW = (
    "b",
    "explicit",
    "2024-05-01",
    0,
    "The commits merged into the main branch have now reached 165.",
)


def test_a_restated_count_with_update_language_supersedes_the_older_one():
    (call,) = quantity_updates("user", [OLD, NEW])
    name, args = call
    assert name == "update_knowledge"
    assert args["content"] == "user: commits now 165 (previously 150)"
    assert args["superseded_ids"] == ["a"] and args["premise_ids"] == ["b", "a"]


def test_no_update_without_update_language_or_a_changed_value():
    plain = ("b", "explicit", "2024-05-01", 0, "The repository has 165 commits.")
    same = ("c", "explicit", "2024-05-02", 0, "The commits have now reached 150.")
    assert quantity_updates("user", [OLD, plain]) == []
    assert quantity_updates("user", [OLD, same]) == []


def test_durations_and_derived_observations_are_not_quantities_to_correct():
    years = ("a", "explicit", "2024-01-01", 1, "User has lived there for 3 years.")
    later = ("b", "explicit", "2024-06-01", 0, "User has now lived there for 4 years.")
    derived = ("c", "deductive", "2024-06-02", 0, "The commits have now reached 170.")
    assert quantity_updates("user", [years, later]) == []
    assert quantity_updates("user", [OLD, derived]) == []
