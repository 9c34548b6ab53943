"""Judge agreement: the four ordinal classes, Cohen's kappa and the acceptance rule."""

from __future__ import annotations

import pytest

from mnemo_train.agreement import accepted, bin_score, kappa


def test_bins_are_quarters_with_each_edge_in_the_class_above() -> None:
    assert [bin_score(s) for s in (0.0, 0.2499, 0.25, 0.5, 0.7499, 0.75, 1.0)] == [
        0,
        0,
        1,
        2,
        2,
        3,
        3,
    ]
    with pytest.raises(ValueError):
        bin_score(1.01)


def test_a_disagreement_at_a_bin_edge_is_a_disagreement() -> None:
    a = [bin_score(s) for s in (0.25, 0.9, 0.1, 0.6)]
    b = [bin_score(s) for s in (0.2499, 0.9, 0.1, 0.6)]
    assert a[0] != b[0]
    k = kappa(a, b)
    assert k is not None and k < 1.0


def test_kappa_of_identical_raters_is_one_even_with_a_single_class() -> None:
    assert kappa([0, 1, 2, 3, 3], [0, 1, 2, 3, 3]) == 1.0
    assert kappa([2, 2, 2], [2, 2, 2]) == 1.0


def test_kappa_of_independent_raters_is_zero() -> None:
    # Every pairing of classes equally often: agreement exactly at chance.
    a = [0, 0, 1, 1] * 5
    b = [0, 1, 0, 1] * 5
    assert kappa(a, b) == pytest.approx(0.0)


def test_kappa_needs_items_and_the_same_items() -> None:
    assert kappa([], []) is None
    with pytest.raises(ValueError):
        kappa([0], [0, 1])


def test_a_run_is_rejected_only_when_both_axes_fail() -> None:
    assert accepted(0.9, 0.1, 0.4) and accepted(0.1, 0.4, 0.4)
    assert not accepted(0.39, 0.1, 0.4)
    assert not accepted(None, None, 0.4) and accepted(None, 0.5, 0.4)
