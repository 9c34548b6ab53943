"""The schedule store's contract, held by the Postgres table and by the tests' fake alike."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from mnemo_dreamer.adapters.schedule import PgSchedule
from mnemo_dreamer.domain import Schedule
from mnemo_dreamer.ports import ScheduleStore
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.vectors.ports import Scope

from .conftest import T0, FakeSchedule

SETTINGS = DreamerSettings(min_new_observations=3, min_interval_s=300, idle_s=10)


@pytest.fixture(params=["fake", pytest.param("postgres", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> ScheduleStore:
    if request.param == "fake":
        return FakeSchedule(SETTINGS)
    return PgSchedule(request.getfixturevalue("pg_pool"), SETTINGS)


def _scope() -> Scope:
    return Scope(f"ws-{uuid.uuid4().hex[:8]}", "alice", "alice")


async def test_observations_are_counted_once_each(store: ScheduleStore) -> None:
    scope = _scope()
    counted = await store.count_explicit(scope, [3, 5], T0)
    assert counted is not None
    assert (counted.explicit_count, counted.last_activity_at, counted.due_at) == (2, T0, None)
    # Redelivered: nothing new. Partly redelivered: only what is new counts.
    assert await store.count_explicit(scope, [3, 5], T0) is None
    later = T0 + timedelta(seconds=1)
    counted = await store.count_explicit(scope, [5, 8], later)
    assert counted is not None and counted.explicit_count == 3
    # The third since the last dream makes one due after the idle delay.
    assert counted.due_at == later + timedelta(seconds=10)
    assert await store.load(scope) == counted
    due = await store.ready(later + timedelta(seconds=10))
    assert scope in {Scope(s.workspace, s.observer, s.observed) for s in due}


async def test_a_completed_dream_is_kept_when_more_are_counted(store: ScheduleStore) -> None:
    scope = _scope()
    await store.count_explicit(scope, [1, 2, 3], T0)
    await store.mark_published(scope, "due-1")
    done = T0 + timedelta(seconds=20)
    await store.complete(scope, done, explicit_seen=3)
    counted = await store.count_explicit(scope, [4], done + timedelta(seconds=1))
    assert counted is not None
    assert (counted.explicit_count, counted.explicit_at_last_dream) == (4, 3)
    assert (counted.last_dream_at, counted.due_event_id, counted.due_at) == (done, None, None)
    assert await store.load(scope) == counted


async def test_representations_are_counted_apart(store: ScheduleStore) -> None:
    mine, theirs = _scope(), _scope()
    await store.count_explicit(mine, [1, 2], T0)
    counted = await store.count_explicit(theirs, [1], T0)
    assert counted is not None and counted.explicit_count == 1
    assert (await store.load(mine)).explicit_count == 2


async def test_a_forgotten_representation_starts_again_from_nothing(store: ScheduleStore) -> None:
    scope, other = _scope(), _scope()
    await store.count_explicit(scope, [1, 2, 3], T0)
    await store.count_explicit(other, [1, 2], T0)
    await store.forget(scope)
    assert await store.load(scope) == Schedule(scope.workspace, scope.observer, scope.observed)
    due = await store.ready(T0 + timedelta(hours=1))
    assert scope not in {Scope(s.workspace, s.observer, s.observed) for s in due}
    # A new representation of the same ids counts its own observations from the first.
    counted = await store.count_explicit(scope, [1], T0)
    assert counted is not None and counted.explicit_count == 1
    assert (await store.load(other)).explicit_count == 2
