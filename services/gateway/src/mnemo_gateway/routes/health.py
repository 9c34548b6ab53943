"""Liveness and readiness.

``/ready`` tells the truth about the whole system: 503, naming each cause, when NATS, an ingest
instance or Postgres does not answer; when a projection is failing (retrying an event, or the
database away); when the oldest event a projection has not applied is older than its limit (a
stalled or overwhelmed projection, measured in time, not only in events); or when a projection
holds quarantined events that no operator has redriven or discarded yet. Dead letters of the
background stages are listed as warnings.

``/ready?scope=serving`` asks only whether this gateway can serve requests (NATS, ingest,
Postgres): a Kubernetes readiness probe uses it, so that trouble elsewhere in the system is
reported without also taking every gateway out of service.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext

from mnemo_runtime.bus import stream_last_seq
from mnemo_runtime.deadletters import OPEN_STATES
from mnemo_schema import subjects

# Commands for this "workspace" are refused at once (it is not a valid id): a probe that proves
# an ingest instance is answering without writing anything.
_PROBE = subjects.command_subject("~ready")
# Each projection, the events it applies, and whether it is memory formation (a longer limit).
_PROJECTIONS = {
    "pg": (subjects.EVENT_SUBJECTS, False),
    "memory": (subjects.OBSERVATION_FILTER, True),
    "passages": (subjects.MESSAGE_FILTER, True),
}

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, str]:
    """Answers while the process lives."""
    return {"status": "ok"}


async def _oldest_unapplied_age(js: JetStreamContext, applied: int, subject: str) -> float | None:
    """Seconds since the oldest event of ``subject`` after ``applied`` was stored, if any."""
    try:
        msg = await js.get_msg(subjects.STREAM, seq=applied + 1, subject=subject, next=True)
    except Exception:
        return None  # nothing after the position
    if msg.time is None:
        return None
    return (datetime.now(UTC) - msg.time).total_seconds()


async def _projection_problems(state: Any, head: int) -> tuple[dict[str, str], dict[str, Any]]:
    problems: dict[str, str] = {}
    found: dict[str, Any] = {}
    settings = state.settings
    async with state.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT name, seq, failing_since, last_error FROM projection_positions"
            )
        ).fetchall()
        letters = await (
            await conn.execute(
                "SELECT stage, count(*) AS n, min(reason) AS reason FROM dead_letters"
                " WHERE status = ANY(%s) GROUP BY stage",
                (list(OPEN_STATES),),
            )
        ).fetchall()
    limits = {False: settings.ready_max_lag_s, True: settings.ready_max_memory_lag_s}
    for r in rows:
        name = r["name"]
        found[name] = int(r["seq"])
        if r["failing_since"] is not None:
            problems[f"projection {name}"] = (
                f"failing since {r['failing_since'].isoformat()}: {r['last_error']}"
            )
        if name in _PROJECTIONS and int(r["seq"]) < head:
            subject, memory = _PROJECTIONS[name]
            age = await _oldest_unapplied_age(state.js, int(r["seq"]), subject)
            if age is not None and age > limits[memory]:
                problems.setdefault(
                    f"projection {name}",
                    f"the oldest event it has not applied was stored {age:.0f} s ago"
                    f" (limit {limits[memory]:.0f} s)",
                )
    warnings: dict[str, str] = {}
    for r in letters:
        text = f"{r['n']} open dead letters (see `mnemo dlq list`), e.g.: {r['reason'][:200]}"
        if str(r["stage"]).startswith("projector-"):
            problems[f"quarantined {r['stage']}"] = text
        else:
            warnings[f"dead letters {r['stage']}"] = text
    return problems, {"positions": found, "warnings": warnings}


@router.get("/ready")
async def ready(request: Request, scope: Literal["system", "serving"] = "system") -> JSONResponse:
    """200 when the system is healthy (see the module's description); else 503 with causes."""
    state = request.app.state
    problems: dict[str, str] = {}
    head = applied = 0
    if not state.nc.is_connected:
        problems["nats"] = "not connected"
    else:
        try:
            head = await stream_last_seq(state.js)
        except Exception as err:
            problems["nats"] = f"event stream unavailable: {err!r}"
        try:
            await state.nc.request(_PROBE, b"{}", timeout=2)
        except NoRespondersError:
            problems["ingest"] = "no ingest instance is answering commands"
        except (NatsTimeout, TimeoutError):
            problems["ingest"] = "ingest did not answer within 2 s"
    try:
        applied = await state.watermark.refresh()
    except Exception as err:
        problems["postgres"] = f"unreachable or projections missing: {err!r}"
    lag = max(0, head - applied)
    body: dict[str, Any] = {"log_head": head, "projected": applied, "lag": lag}
    if scope == "system" and "postgres" not in problems:
        if lag > state.settings.ready_max_lag:
            problems["projections"] = f"behind the log by {lag} events"
        try:
            more, detail = await _projection_problems(state, head)
            problems.update(more)
            body.update(detail)
        except Exception as err:
            problems["postgres"] = f"projection state unreadable: {err!r}"
    body = {"status": "ready" if not problems else "not ready", **body, "problems": problems}
    return JSONResponse(body, status_code=200 if not problems else 503)
