"""When ``mnemo up`` calls the stack up: ready, or serving with only background trouble."""

from __future__ import annotations

from mnemo_cli.local import readiness, settled

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


def test_status_says_ready_and_how_far_each_projection_is_behind() -> None:
    body = {
        "status": "ready",
        "log_head": 31456,
        "lag": {"memory": 0, "passages": 1200, "pg": 0},
        "warnings": {"dead letters deriver": "2 open dead letters"},
        "problems": {},
    }
    assert readiness(200, body) == [
        "ready     yes",
        "warning   dead letters deriver: 2 open dead letters",
        "behind    events each projection has yet to apply (log head 31,456):"
        " memory 0, passages 1,200, pg 0",
    ]


def test_status_names_each_problem_when_not_ready() -> None:
    body = {
        "status": "not ready",
        "lag": {"memory": 7385},
        "problems": {"nats": "no connection", "projection memory": LAGGING},
    }
    assert readiness(503, body) == [
        "ready     no (HTTP 503)",
        "problem   nats: no connection",
        f"problem   projection memory: {LAGGING}",
        "behind    events each projection has yet to apply: memory 7,385",
    ]
    assert readiness(502, {}) == ["ready     no (HTTP 502)"]
