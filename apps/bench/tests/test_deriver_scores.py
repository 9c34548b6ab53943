"""The deriver's formulas at their edges: Coverage, Deriver Quality, Molecular."""

from __future__ import annotations

import math

import pytest

from mnemo_bench.deriver.scores import FLAGS, Coverage, coverage, molecular, molecular_set, quality


def test_empty_gold_set_has_no_recall_and_adds_nothing_when_pooled() -> None:
    empty = coverage([])
    assert (empty.recall, empty.weighted_recall, empty.f1) == (None, None, None)
    one = coverage([("minor", "covered")])
    assert (empty + one).recall == 1.0


def test_all_partial_is_zero_recall_and_half_weighted_recall() -> None:
    c = coverage([("critical", "partial"), ("trivial", "partial"), ("minor", "partial")])
    assert (c.covered, c.partial, c.recall, c.f1) == (0, 3, 0.0, 0.0)
    assert c.weighted_recall == pytest.approx(0.5)


def test_weights_scale_each_fact_by_importance() -> None:
    c = coverage([("critical", "covered"), ("important", "missing"), ("trivial", "partial")])
    assert c.recall == pytest.approx(1 / 3)
    assert c.weighted_recall == pytest.approx((3.0 + 0.25) / 5.5)


def test_f1_with_precision_one_is_2r_over_1_plus_r() -> None:
    c = coverage(
        [("minor", "covered"), ("minor", "missing"), ("minor", "missing"), ("minor", "covered")]
    )
    assert c.f1 == pytest.approx(2 * 0.5 / 1.5)
    assert coverage([("minor", "covered")]).f1 == 1.0


@pytest.mark.parametrize("flag", range(len(FLAGS)))
def test_each_of_the_seven_flags_makes_an_observation_invalid(flag: int) -> None:
    flags = [[False] * 7, [i == flag for i in range(7)]]
    q = quality(flags, temporal=[])
    assert (q.observations, q.valid, q.flagged, q.score) == (2, 1, 1, 0.5)


def test_temporal_confusion_invalidates_but_redundancy_and_fixation_do_not() -> None:
    clean = [[False] * 7] * 4
    q = quality(clean, temporal=[2], redundant=[0, 1], fixated=[3])
    assert (q.valid, q.temporal, q.redundant, q.fixated) == (3, 1, 2, 1)
    assert q.score == 0.75
    # A flagged observation also named by temporal confusion is one invalid observation.
    q2 = quality([[True] + [False] * 6, [False] * 7], temporal=[0, 0, 7])
    assert (q2.valid, q2.temporal) == (1, 1)


def test_no_observations_has_no_quality_score() -> None:
    assert quality([], temporal=[1]).score is None


def test_molecular_is_the_geometric_mean() -> None:
    assert molecular(0.25, 1.0) == pytest.approx(0.5)
    assert molecular(0.0, 1.0) == 0.0
    assert molecular(1.0, 1.0) == 1.0
    m = molecular_set([(0.25, 1.0), (1.0, 1.0)])
    assert m.mean == pytest.approx(0.75)
    assert molecular_set([]).mean is None
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        molecular(1.2, 0.5)
    assert not math.isnan(molecular(1e-12, 1e-12))


def test_pooled_coverage_sums_counts_not_ratios() -> None:
    a = coverage([("minor", "covered")])
    b = coverage([("minor", "missing")] * 3)
    assert (a + b).recall == 0.25
    assert isinstance(a + b, Coverage)
