"""When ``mnemo up`` calls the stack up: ready, or serving with only background trouble."""

from __future__ import annotations

from mnemo_cli.local import settled

LAGGING = "the oldest event it has not applied was stored 1380 s ago (limit 600 s)"


def test_ready_is_up() -> None:
    assert settled(200, {}) == (True, [])


def test_memory_formation_behind_is_up_with_a_warning_naming_its_backlog() -> None:
    body = {
        "status": "not ready",
        "lag": {"memory": 7385, "passages": 4934, "pg": 0},
        "problems": {"projection memory": LAGGING, "projection passages": LAGGING},
    }
    up, warnings = settled(503, body)
    assert up
    assert warnings == [
        f"projection memory: {LAGGING} (7385 events to apply)",
        f"projection passages: {LAGGING} (4934 events to apply)",
    ]


def test_quarantined_events_are_up_with_a_warning() -> None:
    body = {"problems": {"quarantined projector-pg": "1 open dead letters"}}
    assert settled(503, body) == (True, ["quarantined projector-pg: 1 open dead letters"])


def test_what_serving_needs_keeps_waiting() -> None:
    # The entity projection behind, an ingest not answering, Postgres away: not up, even
    # beside background trouble.
    for problem in ("projection pg", "projections", "ingest", "postgres", "nats"):
        body = {"problems": {problem: "...", "projection memory": LAGGING}}
        assert settled(503, body) == (False, []), problem
    assert settled(503, {"problems": {}}) == (False, [])
    assert settled(502, {}) == (False, [])
