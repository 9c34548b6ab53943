"""Relative dates resolved against the message date."""

from __future__ import annotations

from datetime import date

import pytest

from mnemo_runtime.models.local.dates import day_name, resolve_dates

MON_8_MAY_2023 = date(2023, 5, 8)
FRI_12_MAY_2023 = date(2023, 5, 12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went yesterday", "I went on 7 May 2023"),
        ("I'm going tomorrow", "I'm going on 9 May 2023"),
        ("I did it today", "I did it on 8 May 2023"),
        ("the day before yesterday", "on 6 May 2023"),
        ("the day after tomorrow", "on 10 May 2023"),
        ("I was out last night", "I was out on the night of 7 May 2023"),
        ("I ran this morning", "I ran on the morning of 8 May 2023"),
        ("I moved to Lisbon last week", "I moved to Lisbon in the week of 1 May 2023"),
        ("this week", "in the week of 8 May 2023"),
        ("next week", "in the week of 15 May 2023"),
        ("last month", "in April 2023"),
        ("next month", "in June 2023"),
        ("last year", "in 2022"),
        ("this year", "in 2023"),
        ("next year", "in 2024"),
        ("last weekend", "on the weekend of 6 May 2023"),
        ("this past weekend", "on the weekend of 6 May 2023"),
        ("this weekend", "on the weekend of 13 May 2023"),
        ("next weekend", "on the weekend of 20 May 2023"),
        ("3 days ago", "on 5 May 2023"),
        ("two weeks ago", "in the week of 24 April 2023"),
        ("a couple of weeks ago", "in the week of 24 April 2023"),
        ("a month ago", "in April 2023"),
        ("three years ago", "in 2020"),
        ("in two weeks", "in the week of 22 May 2023"),
        ("in a month", "in June 2023"),
        ("a few days ago", "a few days before 8 May 2023"),
        ("last summer", "in summer 2022"),
        ("this summer", "in summer 2023"),
        ("last Friday", "on 5 May 2023"),
        ("this Saturday", "on 13 May 2023"),
        ("next Tuesday", "on 16 May 2023"),
        ("the coming Monday", "on 15 May 2023"),
    ],
)
def test_relative_expressions_from_a_monday(text, expected):
    assert resolve_dates(text, MON_8_MAY_2023) == expected


def test_last_friday_said_on_a_friday_is_a_week_back():
    assert resolve_dates("last Friday", FRI_12_MAY_2023) == "on 5 May 2023"
    assert resolve_dates("last Thursday", FRI_12_MAY_2023) == "on 11 May 2023"
    assert resolve_dates("last Saturday", FRI_12_MAY_2023) == "on 6 May 2023"


@pytest.mark.parametrize(
    ("when", "text", "expected"),
    [
        (date(2024, 3, 1), "yesterday", "on 29 February 2024"),
        (date(2023, 3, 1), "yesterday", "on 28 February 2023"),
        (date(2023, 12, 31), "tomorrow", "on 1 January 2024"),
        (date(2023, 1, 31), "next month", "in February 2023"),
        (date(2023, 3, 31), "a month ago", "in February 2023"),
        (date(2024, 1, 15), "last month", "in December 2023"),
        (date(2023, 12, 20), "next month", "in January 2024"),
        (date(2024, 1, 2), "last week", "in the week of 25 December 2023"),
        (date(2023, 1, 1), "last week", "in the week of 19 December 2022"),
        (date(2023, 10, 1), "last summer", "in summer 2023"),
        (date(2023, 7, 14), "last summer", "in summer 2022"),
        (date(2023, 5, 14), "last weekend", "on the weekend of 6 May 2023"),
    ],
    ids=[
        "leap day",
        "february end",
        "year end",
        "month end forward",
        "month end back",
        "january back",
        "december forward",
        "week across years",
        "sunday new year",
        "summer passed",
        "summer ongoing",
        "weekend from sunday",
    ],
)
def test_calendar_edges(when, text, expected):
    assert resolve_dates(text, when) == expected


def test_bare_weekday_points_back_unless_the_clause_is_about_the_future():
    assert resolve_dates("I hiked on Saturday", MON_8_MAY_2023) == "I hiked on 6 May 2023"
    assert resolve_dates("I'll hike on Saturday", MON_8_MAY_2023) == "I'll hike on 13 May 2023"
    assert resolve_dates("I work Fridays", MON_8_MAY_2023) == "I work Fridays"


def test_prepositions_that_carry_meaning_are_kept():
    assert resolve_dates("since last week", MON_8_MAY_2023) == "since the week of 1 May 2023"
    assert resolve_dates("until next month", MON_8_MAY_2023) == "until June 2023"
    assert resolve_dates("on Saturday", MON_8_MAY_2023) == "on 6 May 2023"
    assert resolve_dates("in the last week", MON_8_MAY_2023) == "in the last week"


def test_sentence_case_and_figures_of_speech():
    assert resolve_dates("Yesterday I ran", MON_8_MAY_2023) == "On 7 May 2023 I ran"
    assert resolve_dates("yesterday's game", MON_8_MAY_2023) == "yesterday's game"
    assert (
        resolve_dates("feels like just yesterday I wore it", MON_8_MAY_2023)
        == "feels like just yesterday I wore it"
    )


def test_running_durations_are_anchored_to_the_message_date():
    assert (
        resolve_dates("I've been vegan for six years now", date(2025, 2, 2))
        == "I've been vegan for six years as of 2 February 2025"
    )
    # A past duration is not running any more.
    assert resolve_dates("I was vegan for two years", MON_8_MAY_2023) == (
        "I was vegan for two years"
    )


def test_day_name():
    assert day_name(date(2023, 5, 7)) == "7 May 2023"
