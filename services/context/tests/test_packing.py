"""Packing at its edges: the 40 % cap, the long/short choice, budgets smaller than the card."""

from __future__ import annotations

from mnemo_context.domain import (
    MessageWindow,
    Observation,
    choose_summary,
    fit_fixed,
    render_representation,
    representation_tokens,
    slice_within,
    summary_cap,
)
from mnemo_runtime.tokens import TokenCounter

TRICKY = [
    "Alice is a nurse.",
    "Bob's café — “quoted” naïve résumé, 😀 and 日本語のテキスト.",
    "On 2023-05-07 (a Sunday) she ran 10km; then: rest!",
    "x" * 140 + " a word past WordPiece's 100-character limit",
    "tabs\tand\nnewlines   and  spaces",
    "-",
]


def test_a_summary_of_exactly_forty_percent_fits():
    assert summary_cap(1000) == 400
    assert choose_summary(1000, short=400, long=None) == "short"
    assert choose_summary(1000, short=401, long=None) is None


def test_the_long_summary_wins_only_when_it_fits_and_is_strictly_longer():
    assert choose_summary(1000, short=100, long=300) == "long"
    assert choose_summary(1000, short=100, long=401) == "short"
    assert choose_summary(1000, short=300, long=300) == "short"
    assert choose_summary(1000, short=None, long=50) == "long"
    assert choose_summary(1000, short=None, long=None) is None
    assert choose_summary(100, short=41, long=90) is None


def test_slice_and_card_are_subtracted_first():
    fixed = fit_fixed(1000, representation_tokens=300, card_tokens=100)
    assert (fixed.representation, fixed.card, fixed.remaining) == (True, True, 600)


def test_a_budget_smaller_than_both_keeps_the_card_before_the_slice():
    fixed = fit_fixed(150, representation_tokens=300, card_tokens=100)
    assert (fixed.representation, fixed.card, fixed.remaining) == (False, True, 50)
    fixed = fit_fixed(350, representation_tokens=300, card_tokens=100)
    assert (fixed.representation, fixed.card, fixed.remaining) == (False, True, 250)


def test_a_budget_smaller_than_the_card_drops_it_but_may_keep_a_small_slice():
    fixed = fit_fixed(50, representation_tokens=40, card_tokens=100)
    assert (fixed.representation, fixed.card, fixed.remaining) == (True, False, 10)
    fixed = fit_fixed(20, representation_tokens=40, card_tokens=100)
    assert (fixed.representation, fixed.card, fixed.remaining) == (False, False, 20)


def test_a_zero_budget_keeps_nothing():
    fixed = fit_fixed(0, representation_tokens=1, card_tokens=1)
    assert (fixed.representation, fixed.card, fixed.remaining) == (False, False, 0)
    assert choose_summary(0, short=0, long=None) == "short"  # an empty summary costs nothing
    window = MessageWindow(0)
    assert window.full and not window.offer(0)


def test_the_first_message_that_does_not_fit_stops_the_window():
    window = MessageWindow(100)
    assert [window.offer(t) for t in (40, 50, 20, 5)] == [True, True, False, False]
    assert (window.taken, window.left) == (2, 10)


def test_a_message_exactly_filling_the_budget_is_taken():
    window = MessageWindow(90)
    assert window.offer(40) and window.offer(50)
    assert (window.taken, window.left) == (2, 0)
    assert not window.offer(1)


def test_a_representation_is_grouped_by_level_in_a_fixed_order():
    text = render_representation(
        [
            Observation("3", "inductive", "Alice tends to plan ahead."),
            Observation("1", "explicit", "Alice is a nurse."),
            Observation("2", "explicit", "Alice lives in Lyon."),
            Observation("4", "contradiction", "Alice's city differs across sessions."),
        ]
    )
    assert text == (
        "## Explicit observations\n- Alice is a nurse.\n- Alice lives in Lyon.\n\n"
        "## Inductive observations\n- Alice tends to plan ahead.\n\n"
        "## Contradictions\n- Alice's city differs across sessions."
    )
    assert render_representation([]) == ""


def test_representation_tokens_are_those_of_the_rendered_text():
    counter = TokenCounter()
    levels = ("explicit", "deductive", "inductive", "contradiction")
    observations = [Observation(str(i), levels[i % 4], t) for i, t in enumerate(TRICKY * 2)]
    # Some counted by the store, some not: both ways give the rendered text's count.
    stored = [
        Observation(o.id, o.level, o.content, counter.count(o.content) if i % 2 else None)
        for i, o in enumerate(observations)
    ]
    for some in (stored, stored[:1], stored[3:4], stored[:5]):
        expected = counter.count(render_representation(some))
        assert representation_tokens(some, counter.count_many) == expected
    assert representation_tokens([], counter.count_many) == 0


def test_a_slice_is_cut_to_its_best_head_that_fits():
    counter = TokenCounter()
    ranked = [
        Observation("a", "explicit", "Alice is a nurse."),
        Observation("b", "deductive", "Alice works nights, so she sleeps in the day."),
        Observation("c", "explicit", "Alice lives in Lisbon."),
    ]
    for n in range(len(ranked) + 1):
        exact = representation_tokens(ranked[:n], counter.count_many)
        assert slice_within(ranked, exact, counter.count_many) == ranked[:n]
        # One token short of a head: the head before it.
        if n:
            assert slice_within(ranked, exact - 1, counter.count_many) == ranked[: n - 1]
    assert slice_within(ranked, 0, counter.count_many) == []
    assert slice_within([], 10, counter.count_many) == []
