"""How many events a fair projection's next batch may hold: what the pace of its last batches
applies in the turn's time, at most its batch size."""

from __future__ import annotations

from typing import Any

from mnemo_projector.runner import Projector


class _Projection:
    name = "paced"
    applied_subject = "mnemo.test.paced.applied"
    pipelined = False

    def __init__(self, fair: bool) -> None:
        self.fair = fair

    def filters(self, partition: int) -> list[str]:
        return [f"mnemo.evt.*.{partition}.msg.>"]


def _projector(fair: bool, turn_s: float | None) -> Projector:
    none: Any = None
    return Projector(_Projection(fair), none, none, none, 64, turn_s=turn_s)


def test_the_turn_follows_the_pace_of_the_last_batches() -> None:
    p = _projector(fair=True, turn_s=0.25)
    assert p._pace.limit() is None  # no pace yet: the batch size
    p._pace.record(1.0, 100)  # 10 ms an event
    assert p._pace.limit() == 25
    for _ in range(20):
        p._pace.record(2.0, 10)  # slower now: 200 ms an event
    assert p._pace.limit() == 1
    p._pace.record(0.0, 0)  # an empty batch says nothing about the pace
    assert p._pace.limit() == 1


def test_a_projection_in_log_order_keeps_its_batch_size() -> None:
    p = _projector(fair=False, turn_s=0.25)
    p._pace.record(1.0, 10)
    assert p._pace.limit() is None
