"""Cadence rules per session: when short and long summaries fall due, and restart recovery."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_schema.config import SummaryConfiguration
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import Cadence, SessionLog, Stored, Turn

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turn(seq: int) -> Turn:
    return Turn(seq, f"m{seq}", "caroline" if seq % 2 else "melanie", f"message {seq}", AT)


def run(state: SessionLog, seqs: range) -> dict[int, list[SummaryType]]:
    """Feed messages as if every due summary were written; which kinds fell due at which seq."""
    fired: dict[int, list[SummaryType]] = {}
    for seq in seqs:
        t = turn(seq)
        jobs = state.due(t)
        if jobs:
            fired[seq] = [j.kind for j in jobs]
        state.accept(t, {j.kind: f"summary at {seq}" for j in jobs})
    return fired


def test_short_every_20_and_long_every_60_exactly_at_the_boundaries():
    fired = run(SessionLog.fresh(Cadence()), range(1, 121))
    assert fired == {
        20: ["short"],
        40: ["short"],
        60: ["short", "long"],
        80: ["short"],
        100: ["short"],
        120: ["short", "long"],
    }


def test_a_job_merges_the_previous_summary_with_every_message_since():
    state = SessionLog.fresh(Cadence())
    run(state, range(1, 40))
    jobs = state.due(turn(40))
    assert [j.kind for j in jobs] == ["short"]
    job = jobs[0]
    assert job.previous == "summary at 20"
    assert [t.seq for t in job.turns] == list(range(21, 41))
    assert job.newest.message_id == "m40"
    assert job.messages_covered == 40


def test_nothing_changes_until_the_message_is_accepted():
    state = SessionLog.fresh(Cadence())
    run(state, range(1, 20))
    assert state.due(turn(20)) and state.due(turn(20))
    assert state.last_seq == 19
    assert state.seen(19) and not state.seen(20)


def test_a_parked_summary_closes_its_window_and_keeps_the_previous_text():
    state = SessionLog.fresh(Cadence())
    run(state, range(1, 21))
    for seq in range(21, 40):
        state.accept(turn(seq), {})
    state.accept(turn(40), {"short": None})
    assert state.tracks["short"].previous == "summary at 20"
    assert state.tracks["short"].pending == []
    assert not state.due(turn(41))


def test_restore_counts_only_the_messages_after_each_types_newest_summary():
    latest: dict[SummaryType, Stored] = {"short": Stored("short text", 40, 40)}
    messages = [turn(s) for s in range(1, 46)]  # 45 messages stored, short summary at 40
    state = SessionLog.restore(Cadence(), latest, messages)
    assert len(state.tracks["short"].pending) == 5
    assert len(state.tracks["long"].pending) == 45
    assert state.last_seq == 45
    # Continuing from the restored state fires exactly where an uninterrupted run would.
    assert run(state, range(46, 81)) == {60: ["short", "long"], 80: ["short"]}
    assert state.tracks["short"].covered == 80


def test_restore_with_a_summary_newer_than_any_stored_message_never_repeats_it():
    state = SessionLog.restore(Cadence(), {"short": Stored("s", 20, 20)}, [])
    assert state.seen(20)
    assert state.tracks["short"].previous == "s"


def test_session_configuration_overrides_the_default_cadence():
    cadence = Cadence().overridden(
        [
            SummaryConfiguration(messages_per_short_summary=5),
            SummaryConfiguration(messages_per_long_summary=10),
            None,
        ]
    )
    assert cadence == Cadence(enabled=True, short=5, long=10)
    fired = run(SessionLog.fresh(cadence), range(1, 11))
    assert fired == {5: ["short"], 10: ["short", "long"]}


def test_a_disabled_session_is_never_summarized_and_holds_no_messages():
    state = SessionLog.fresh(Cadence().overridden([SummaryConfiguration(enabled=False)]))
    assert run(state, range(1, 121)) == {}
    assert state.pending() == 0
