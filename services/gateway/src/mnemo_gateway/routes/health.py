"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from mnemo_runtime.bus import stream_last_seq
from mnemo_schema import subjects

# Commands for this "workspace" are refused at once (it is not a valid id): a probe that proves
# an ingest instance is answering without writing anything.
_PROBE = subjects.command_subject("~ready")

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, str]:
    """Answers while the process lives."""
    return {"status": "ok"}


@router.get("/ready")
async def ready(request: Request) -> JSONResponse:
    """200 when NATS, ingest, Postgres and the projections answer and are caught up; else 503."""
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
