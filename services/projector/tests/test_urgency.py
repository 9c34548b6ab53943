"""A conversation's batches are foreground, a backlog's background."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from mnemo_projector.urgency import READING_TURN_S, Pace, RecentWork, awaited
from mnemo_runtime.precedence import precedence
from mnemo_schema.events import MessagePosted
from mnemo_schema.observations import ObservationWritten


def test_a_few_events_with_nothing_waiting_are_foreground():
    recent = RecentWork(window_s=2.0, most=4)
    assert recent.foreground("chat", 1, waiting=0, now=10.0)
    assert recent.foreground("chat", 2, waiting=0, now=10.5)


def test_events_still_waiting_make_a_batch_background():
    recent = RecentWork(window_s=2.0, most=4)
    assert not recent.foreground("backlog", 1, waiting=4, now=10.0)
    assert recent.foreground("chat", 1, waiting=1, now=10.0)  # a small batch cut in two


def test_many_events_in_the_window_are_a_backlog_until_it_passes():
    recent = RecentWork(window_s=2.0, most=4)
    assert recent.foreground("w", 3, waiting=0, now=10.0)
    assert not recent.foreground("w", 2, waiting=0, now=11.0)  # 5 within 2 s
    assert recent.foreground("w", 1, waiting=0, now=13.5)  # the window moved on
    assert recent.foreground("other", 4, waiting=0, now=11.0)  # counted apart


def test_workspaces_gone_quiet_are_forgotten():
    recent = RecentWork(window_s=1.0, most=4)
    for i in range(1100):
        recent.foreground(f"w{i}", 1, waiting=0, now=float(i))
    assert len(recent._applied) < 1024


def _observation(backlog: bool = False) -> ObservationWritten:
    """An explicit observation the deriver made of message m1 (``backlog``: as a backlog's)."""
    return ObservationWritten(
        workspace="w",
        observer="p",
        observed="p",
        observation_id="o1",
        level="explicit",
        content="P likes tea.",
        source_message_ids=["m1"],
        backlog=backlog,
    )


def test_only_messages_and_the_observations_made_of_them_are_awaited():
    posted = MessagePosted(
        workspace="w",
        session_id="s",
        message_id="m1",
        peer_id="p",
        content="I like tea.",
        metadata={},
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        token_count=4,
    )
    derived = _observation()
    dreamt = derived.model_copy(update={"origin": "dreamer", "level": "deductive"})
    assert awaited([posted]) and awaited([derived]) and awaited([dreamt, derived])
    assert not awaited([dreamt]) and not awaited([None]) and not awaited([])
    assert not awaited([derived.model_copy(update={"backlog": True})])


def test_a_batch_holds_what_the_pace_applies_in_a_turn_and_less_while_reads_are_answered():
    pace = Pace(turn_s=0.25)
    assert pace.limit() is None  # no pace yet
    pace.record(1.0, 100)  # 10 ms an event
    assert pace.limit() == 25
    assert pace.limit(reading=True) == int(READING_TURN_S / 0.01)
    assert Pace(turn_s=None).limit(reading=True) is None


def _summary_only() -> list[None]:
    """A batch nobody waits on (its events stand in for a summary: not awaited)."""
    return [None]


async def test_a_conversations_batch_nobody_waits_on_goes_once_something_awaited_comes_behind():
    # Reads that never stop hold a background step up to READS_MAX_WAIT_S; the summary of a
    # conversation holds the loop, and with it the observation posted just after.
    recent = RecentWork(window_s=2.0, most=4)
    order = precedence()
    came: list[bool] = [False]
    applied = asyncio.Event()

    async def apply() -> None:
        applied.set()

    with order.answering():
        step = asyncio.create_task(
            recent.in_turn(
                "test-arrived", "chat", _summary_only(), 0, 10.0, apply, lambda _own: came[0]
            )
        )
        for _ in range(5):
            await asyncio.sleep(0)
        assert not applied.is_set()  # nobody waits on it: it yields to the reads
        came[0] = True  # an observation came in behind it
        await asyncio.wait_for(step, timeout=1.0)
    assert applied.is_set()


async def test_a_backlogs_batch_waits_its_turn_while_its_own_events_come_in_behind():
    recent = RecentWork(window_s=2.0, most=4)
    order = precedence()
    applied = asyncio.Event()
    others = [False]

    async def apply() -> None:
        applied.set()

    def arrived(own: bool) -> bool:
        return own or others[0]  # the backlog's own events keep coming

    with order.answering():
        step = asyncio.create_task(
            recent.in_turn("test-backlog", "big", _summary_only(), 100, 10.0, apply, arrived)
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(step), timeout=0.3)
        assert not applied.is_set()
        others[0] = True  # another workspace's observation came in: the loop must go on
        await asyncio.wait_for(step, timeout=1.0)
    assert applied.is_set()


async def test_a_conversations_batch_with_more_of_it_waiting_behind_is_not_held_back():
    # A session just created: its entity events (nobody waits on them) and, behind them in the
    # line, its first message.
    recent = RecentWork(window_s=2.0, most=4)
    applied = asyncio.Event()

    async def apply() -> None:
        applied.set()

    with precedence().answering():
        await asyncio.wait_for(
            recent.in_turn("test-behind", "chat", _summary_only(), 1, 10.0, apply), timeout=1.0
        )
    assert applied.is_set()


async def test_a_backlogs_observations_wait_their_turn_in_a_quiet_workspace_too():
    # The deriver formed them as a backlog's: however few of them the window saw, nobody
    # waits on them, and more of them behind do not make them a conversation's.
    recent = RecentWork(window_s=2.0, most=64)
    obs = _observation(backlog=True)
    applied = asyncio.Event()

    async def apply() -> None:
        applied.set()

    with precedence().answering():
        step = asyncio.create_task(recent.in_turn("test-formed-late", "w", [obs], 3, 10.0, apply))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(step), timeout=0.3)
        assert not applied.is_set()
    await asyncio.wait_for(step, timeout=5.0)
