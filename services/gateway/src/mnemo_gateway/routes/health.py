"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from mnemo_runtime.bus import stream_last_seq

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, str]:
    """Answers while the process lives."""
    return {"status": "ok"}


@router.get("/ready")
async def ready(request: Request) -> JSONResponse:
    """200 when NATS, Postgres and the projections are reachable and caught up; else 503 + why."""
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
        applied = await state.watermark.refresh()
    except Exception as err:
        problems["postgres"] = f"unreachable or projections missing: {err!r}"
    lag = max(0, head - applied)
    if not problems and lag > state.ready_max_lag:
        problems["projections"] = f"behind the log by {lag} events"
    body = {
        "status": "ready" if not problems else "not ready",
        "log_head": head,
        "projected": applied,
        "lag": lag,
        "problems": problems,
    }
    return JSONResponse(body, status_code=200 if not problems else 503)
