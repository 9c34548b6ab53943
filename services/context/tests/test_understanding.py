"""Reading a question without a model: named peers, time windows, the current value."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo_context.understanding import Window, named_peers, time_windows, understand

NOW = datetime(2023, 11, 10, 15, 0, tzinfo=UTC)
PEERS = {"caroline": [], "melanie": ["Mel"], "jon": [], "gina-b": ["Gina"]}


def days(windows: list[Window]) -> list[tuple[str, str]]:
    return [(w.start.date().isoformat(), w.end.date().isoformat()) for w in windows]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # Real LoCoMo questions, each with the window its evidence was said in.
        ("Who did Maria have dinner with on May 3, 2023?", [("2023-05-03", "2023-05-04")]),
        (
            "What did Gina find for her clothing store on 1 February, 2023?",
            [("2023-02-01", "2023-02-02")],
        ),
        ("What event is Nate organizing in June 2022?", [("2022-06-01", "2022-07-01")]),
        ("What state did Joanna visit in summer 2021?", [("2021-06-01", "2021-09-01")]),
        ("How many times has Melanie gone to the beach in 2023?", [("2023-01-01", "2024-01-01")]),
        (
            "What did John do the week before August 3, 2023 involving his kids?",
            [("2023-07-27", "2023-08-03")],
        ),
        # A relative expression counts from the date the question gives.
        (
            "What did Maria participate in last weekend before April 10, 2023?",
            [("2023-04-08", "2023-04-10"), ("2023-04-10", "2023-04-11")],
        ),
        (
            "What was Tim's huge writing issue last week, as mentioned on November 6, 2023?",
            [("2023-10-30", "2023-11-06"), ("2023-11-06", "2023-11-07")],
        ),
        # ... else from now; a month without a year is the latest one up to now.
        ("What did she do last week?", [("2023-10-30", "2023-11-06")]),
        ("What kind of deal did John get in December?", [("2022-12-01", "2023-01-01")]),
        ("When did Melanie go camping in June?", [("2023-06-01", "2023-07-01")]),
        ("What may happen next?", []),
        ("When did Caroline go to the LGBTQ support group?", []),
    ],
)
def test_time_expressions_become_windows(question: str, expected: list[tuple[str, str]]) -> None:
    assert days(time_windows(question, NOW)) == expected


def test_without_a_reference_date_only_absolute_times_count() -> None:
    assert days(time_windows("What did she do last week?", None)) == []
    assert days(time_windows("What happened in June 2022?", None)) == [("2022-06-01", "2022-07-01")]


def test_peers_are_named_by_id_or_by_the_names_they_go_by_as_whole_words() -> None:
    assert named_peers("What did Caroline research?", PEERS) == {"caroline"}
    assert named_peers("What did Mel and her kids paint?", PEERS) == {"melanie"}
    assert named_peers("Where is Gina's fashion internship?", PEERS) == {"gina-b"}
    assert named_peers("Did Jonathan call?", PEERS) == frozenset()
    assert named_peers("Did Caroline and Jon meet?", PEERS) == {"caroline", "jon"}


def test_questions_about_the_current_value_are_recognised() -> None:
    assert understand("What book is Jon currently reading?", PEERS, NOW).current
    assert understand("Where does she live now?", PEERS, NOW).current
    assert not understand("Where did she live in 2020?", PEERS, NOW).current


def test_a_window_holds_its_start_and_not_its_end() -> None:
    (w,) = time_windows("on May 3, 2023", NOW)
    assert w.holds(datetime(2023, 5, 3, tzinfo=UTC)) and w.holds(
        datetime(2023, 5, 3, 23, tzinfo=UTC)
    )
    assert not w.holds(datetime(2023, 5, 4, tzinfo=UTC)) and not w.holds(None)
