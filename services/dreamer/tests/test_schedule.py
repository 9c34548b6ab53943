"""When a representation is due for a dream: thresholds, interval, idle delay, restarts, locks."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_dreamer.service import Dreamer
from mnemo_runtime.vectors.ports import Scope
from mnemo_schema.dreams import DreamCompleted, DreamDue
from mnemo_schema.observations import ObservationsErased, ObservationWritten

W = datetime(2024, 1, 1, tzinfo=UTC)
SCOPE = Scope("ws", "alice", "alice")


def explicit(n: int, observer: str = "alice", observed: str = "alice") -> ObservationWritten:
    return ObservationWritten(
        workspace="ws",
        observation_id=f"o{n}",
        observer=observer,
        observed=observed,
        content=f"Alice said thing {n}",
        source_message_ids=["m"],
        source_span="x",
    )


async def feed(d: Dreamer, start: int, n: int) -> None:
    for i in range(start, start + n):
        await d.observed(i, explicit(i))


async def test_no_dream_below_the_threshold(world) -> None:
    d = world.dreamer()
    await feed(d, 1, 2)
    world.clock.advance(3600)
    assert await d.tick() == 0


async def test_dream_due_after_threshold_and_idle_delay(world) -> None:
    d = world.dreamer()
    await feed(d, 1, 3)
    assert await d.tick() == 0, "waits for the representation to go quiet"
    world.clock.advance(5)
    await feed(d, 4, 1)  # new activity postpones the due dream
    world.clock.advance(6)
    assert await d.tick() == 0
    world.clock.advance(5)
    assert await d.tick() == 1
    [due] = world.log.of(DreamDue)
    assert (due.observer, due.observed, due.reason, due.explicit_count) == (
        "alice",
        "alice",
        "threshold",
        4,
    )
    assert await d.tick() == 0, "one DreamDue per pending dream"


async def test_redelivered_observations_are_counted_once(world) -> None:
    d = world.dreamer()
    for _ in range(5):
        await d.observed(1, explicit(1))
    world.clock.advance(60)
    assert await d.tick() == 0


async def test_minimum_interval_between_dreams(world) -> None:
    d = world.dreamer()
    await feed(d, 1, 3)
    world.clock.advance(11)
    await d.tick()
    [due] = world.log.of(DreamDue)
    assert await d.dream(due) is not None
    await feed(d, 4, 3)
    world.clock.advance(60)
    assert await d.tick() == 0, "the last dream was a minute ago"
    world.clock.advance(300)
    assert await d.tick() == 1
    assert len(world.log.of(DreamDue)) == 2


async def test_derived_observations_do_not_count(world) -> None:
    d = world.dreamer()
    for i in range(1, 6):
        e = explicit(i).model_copy(update={"level": "deductive", "premise_ids": ["x"]})
        await d.observed(i, e)
    world.clock.advance(60)
    assert await d.tick() == 0


async def test_schedule_survives_a_restart(world) -> None:
    await feed(world.dreamer(), 1, 2)
    restarted = world.dreamer()  # nothing in process memory: only the table carries over
    await feed(restarted, 3, 1)
    world.clock.advance(11)
    assert await restarted.tick() == 1


async def test_a_representation_never_dreams_twice_at_once(world) -> None:
    d = world.dreamer()
    due = DreamDue(workspace="ws", observer="alice", observed="alice", reason="requested", due_at=W)
    async with world.schedule.lock(SCOPE):
        assert await d.dream(due) is None
        assert world.log.of(DreamCompleted) == []
    assert await d.dream(due) is not None


async def test_completion_resets_the_count_and_keeps_late_arrivals(world) -> None:
    d = world.dreamer()
    await feed(d, 1, 3)
    world.clock.advance(11)
    await d.tick()
    [due] = world.log.of(DreamDue)
    await d.dream(due)
    row = await world.schedule.load(SCOPE)
    assert (row.new_observations, row.due_at, row.due_event_id) == (0, None, None)
    assert row.last_dream_at == world.clock.now


async def test_a_representation_erased_whole_leaves_the_schedule(world) -> None:
    d = world.dreamer()
    await feed(d, 1, 3)
    # Some of its observations erased (a message's): it stays, and dreams.
    await d.erased(
        ObservationsErased(
            workspace="ws", observer="alice", observed="alice", observation_ids=["o1"]
        )
    )
    assert (await world.schedule.load(SCOPE)).explicit_count == 3
    # Erased with its peer: nothing of it is kept, and no dream is due.
    await d.erased(
        ObservationsErased(workspace="ws", observer="alice", observed="alice", whole=True)
    )
    assert SCOPE not in world.schedule.rows
    world.clock.advance(3600)
    assert await d.tick() == 0
