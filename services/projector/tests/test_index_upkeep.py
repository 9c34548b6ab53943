"""When the memory projection has the vector index build its search structures."""

from __future__ import annotations

from mnemo_projector.memory_vectors import IndexUpkeep


def test_due_only_after_enough_points_and_a_quiet_spell() -> None:
    upkeep = IndexUpkeep(after_points=100, quiet_s=30.0)
    upkeep.written(60, now=10.0)
    assert not upkeep.due(now=1_000.0)  # too few points, however quiet
    upkeep.written(40, now=20.0)
    assert not upkeep.due(now=49.9)  # enough points, writes too recent
    assert upkeep.due(now=50.0)
    upkeep.done()
    assert not upkeep.due(now=10_000.0)


def test_a_write_restarts_the_quiet_spell_and_empty_writes_do_not() -> None:
    upkeep = IndexUpkeep(after_points=10, quiet_s=5.0)
    upkeep.written(10, now=0.0)
    upkeep.written(0, now=4.0)
    assert upkeep.due(now=5.0)
    upkeep.written(1, now=5.0)
    assert not upkeep.due(now=9.9)
    assert upkeep.due(now=10.0)
