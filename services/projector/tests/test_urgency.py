"""A conversation's batches are foreground, a backlog's background."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_projector.urgency import READING_TURN_S, Pace, RecentWork, awaited
from mnemo_schema.events import MessagePosted
from mnemo_schema.observations import ObservationWritten


def test_a_few_events_with_nothing_waiting_are_foreground():
    recent = RecentWork(window_s=2.0, most=4)
    assert recent.foreground("chat", 1, more_waiting=False, now=10.0)
    assert recent.foreground("chat", 2, more_waiting=False, now=10.5)


def test_events_still_waiting_make_a_batch_background():
    recent = RecentWork(window_s=2.0, most=4)
    assert not recent.foreground("backlog", 1, more_waiting=True, now=10.0)


def test_many_events_in_the_window_are_a_backlog_until_it_passes():
    recent = RecentWork(window_s=2.0, most=4)
    assert recent.foreground("w", 3, more_waiting=False, now=10.0)
    assert not recent.foreground("w", 2, more_waiting=False, now=11.0)  # 5 within 2 s
    assert recent.foreground("w", 1, more_waiting=False, now=13.5)  # the window moved on
    assert recent.foreground("other", 4, more_waiting=False, now=11.0)  # counted apart


def test_workspaces_gone_quiet_are_forgotten():
    recent = RecentWork(window_s=1.0, most=4)
    for i in range(1100):
        recent.foreground(f"w{i}", 1, more_waiting=False, now=float(i))
    assert len(recent._applied) < 1024


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
    derived = ObservationWritten(
        workspace="w",
        observer="p",
        observed="p",
        observation_id="o1",
        level="explicit",
        content="P likes tea.",
        source_message_ids=["m1"],
    )
    dreamt = derived.model_copy(update={"origin": "dreamer", "level": "deductive"})
    assert awaited([posted]) and awaited([derived]) and awaited([dreamt, derived])
    assert not awaited([dreamt]) and not awaited([None]) and not awaited([])


def test_a_batch_holds_what_the_pace_applies_in_a_turn_and_less_while_reads_are_answered():
    pace = Pace(turn_s=0.25)
    assert pace.limit() is None  # no pace yet
    pace.record(1.0, 100)  # 10 ms an event
    assert pace.limit() == 25
    assert pace.limit(reading=True) == int(READING_TURN_S / 0.01)
    assert Pace(turn_s=None).limit(reading=True) is None
