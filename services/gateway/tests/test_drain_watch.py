"""``queue.empty``'s bookkeeping: which queues just drained, given what the probe finds."""

from __future__ import annotations

import asyncio

from mnemo_gateway.webhooks.drain import OUTSIDE_SESSIONS, Drained, DrainWatch


class Outstanding:
    """A queue whose state the test sets: per session, (units in all, units left)."""

    def __init__(self, listened: bool = True) -> None:
        self.now: dict[str, tuple[int, int]] = {}
        self.endpoint = listened
        self.reads = 0

    async def listened(self, workspace: str) -> bool:
        return self.endpoint

    async def outstanding(self, workspace: str) -> dict[str, tuple[int, int]]:
        self.reads += 1
        return dict(self.now)


def test_each_session_drains_on_its_own_then_the_workspace() -> None:
    queue = Outstanding()
    watch = DrainWatch(queue)
    watch.touched("w", ["a", "b"])
    queue.now = {"a": (3, 0), "b": (2, 1)}
    assert asyncio.run(watch.check("w")) == [Drained("w", "a", 3)]
    queue.now = {"a": (3, 0), "b": (2, 0)}
    assert asyncio.run(watch.check("w")) == [Drained("w", "b", 2), Drained("w", None, 5)]
    assert watch.busy() == []


def test_work_in_no_session_keeps_the_workspace_busy_and_drains_as_the_workspace() -> None:
    # A dream of a peer's whole representation is in no session: its note names none.
    queue = Outstanding()
    watch = DrainWatch(queue)
    watch.touched("w", ["a"])
    watch.touched("w", [])
    queue.now = {"a": (4, 0), OUTSIDE_SESSIONS: (1, 1)}
    assert asyncio.run(watch.check("w")) == [Drained("w", "a", 4)]
    assert watch.busy() == ["w"]
    queue.now = {"a": (4, 0), OUTSIDE_SESSIONS: (1, 0)}
    # No session named "" drains: only the workspace, once the dream is done.
    assert asyncio.run(watch.check("w")) == [Drained("w", None, 5)]
    assert asyncio.run(watch.check("w")) == []


def test_a_workspace_no_stage_announced_is_never_checked() -> None:
    queue = Outstanding()
    queue.now = {"a": (1, 0)}
    assert asyncio.run(DrainWatch(queue).check("w")) == []


def test_a_workspace_without_an_endpoint_is_forgotten_without_reading_its_queue() -> None:
    queue = Outstanding(listened=False)
    watch = DrainWatch(queue)
    watch.touched("w", ["a"])
    queue.now = {"a": (3, 1)}
    assert asyncio.run(watch.check("w")) == []
    assert queue.reads == 0
    assert watch.busy() == []
    # An endpoint registered meanwhile: the next announcement has the workspace watched again.
    queue.endpoint = True
    watch.touched("w", ["a"])
    queue.now = {"a": (3, 0)}
    assert asyncio.run(watch.check("w")) == [Drained("w", "a", 3), Drained("w", None, 3)]
