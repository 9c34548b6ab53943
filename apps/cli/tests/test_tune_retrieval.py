"""The fitting of the engine's weights: the descent and the weights' JSON form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mnemo_cli.tune_retrieval import _weights, descend, weights_json, with_value
from mnemo_context.fusion import DEFAULT_WEIGHTS, Weights


def test_weights_go_through_json_and_what_is_left_out_keeps_the_code_value() -> None:
    w = replace(DEFAULT_WEIGHTS, k=20, spread=0.5, observation_k=40, named=2.0)

    assert _weights(weights_json(w)) == w
    assert _weights({"spread": 0.7}) == replace(DEFAULT_WEIGHTS, spread=0.7)


def test_the_descent_moves_each_weight_to_its_best_value_and_never_loses() -> None:
    def score(groups: Sequence[Sequence[Any]], w: Weights) -> float:
        del groups
        return -abs(w.spread - 0.3) - abs(w.observation_k - 20) / 100

    grid = {"spread": (0.0, 0.3, 1.0), "observation_k": (5.0, 20.0, 60.0)}
    start = with_value(with_value(DEFAULT_WEIGHTS, "spread", 1.0), "observation_k", 5)

    best, got = descend([[]], start, grid=grid, score_of=score)

    assert (best.spread, best.observation_k) == (0.3, 20)
    assert got == 0.0 and got >= score([[]], start)
