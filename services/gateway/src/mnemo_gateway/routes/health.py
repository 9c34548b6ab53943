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

import asyncio
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from mnemo_runtime import direct, positions
from mnemo_runtime.bus import stream_last_seq
from mnemo_runtime.deadletters import OPEN_STATES
from mnemo_schema import subjects

# Commands for this "workspace" are refused at once (it is not a valid id): a probe that proves
# an ingest instance is answering without writing anything.
_PROBE = subjects.command_subject("~ready")


def _projection_filters(name: str, partition: int) -> tuple[list[str], bool] | None:
    """The stored subjects a projection applies in ``partition`` (as the projector reads them),
    and whether it is memory formation (a longer limit)."""
    if name == positions.ENTITIES:
        return [subjects.entity_filter("*", partition), subjects.message_filter(partition)], False
    if name == positions.MEMORY:
        return [
            subjects.observation_filter(partition),
            subjects.summary_filter(partition),
            subjects.dream_filter(partition),
        ], True
    if name == positions.PASSAGES:
        return [subjects.message_filter(partition)], True
    return None


router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, str]:
    """Answers while the process lives."""
    return {"status": "ok"}


async def _behind(nc: NATS, applied: int, filters: list[str]) -> tuple[int, float | None]:
    """Events of ``filters`` after ``applied``, and the age in seconds of the oldest of them."""
    found = await asyncio.gather(*(direct.next_from(nc, f, applied + 1) for f in filters))
    events = sum(f.pending + 1 for f in found if f is not None)
    times = [f.time for f in found if f is not None and f.time is not None]
    age = (datetime.now(UTC) - min(times)).total_seconds() if times else None
    return events, age


async def _projection_problems(state: Any) -> tuple[dict[str, str], dict[str, Any]]:
    problems: dict[str, str] = {}
    lag: dict[str, int] = {}
    settings = state.settings
    async with state.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT name, partition, seq, failing_since, last_error FROM projection_positions"
                " ORDER BY name, partition"
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
    checks = []
    for r in rows:
        name, partition = r["name"], int(r["partition"])
        if r["failing_since"] is not None:
            problems[f"projection {name}"] = (
                f"failing since {r['failing_since'].isoformat()}: {r['last_error']}"
            )
        known = _projection_filters(name, partition)
        if known is not None:
            checks.append((name, known[1], _behind(state.nc, int(r["seq"]), known[0])))
    for (name, memory, _), (events, age) in zip(
        checks, await asyncio.gather(*(c[2] for c in checks)), strict=True
    ):
        lag[name] = lag.get(name, 0) + events
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
    return problems, {"lag": lag, "warnings": warnings}


@router.get("/ready")
async def ready(request: Request, scope: Literal["system", "serving"] = "system") -> JSONResponse:
    """200 when the system is healthy (see the module's description); else 503 with causes."""
    state = request.app.state
    problems: dict[str, str] = {}
    head = 0
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
        await state.watermark.refresh()
    except Exception as err:
        problems["postgres"] = f"unreachable or projections missing: {err!r}"
    body: dict[str, Any] = {"log_head": head}
    if scope == "system" and "postgres" not in problems and "nats" not in problems:
        try:
            more, detail = await _projection_problems(state)
            problems.update(more)
            body.update(detail)
            behind = detail["lag"].get(positions.ENTITIES, 0)
            if behind > state.settings.ready_max_lag:
                problems["projections"] = f"behind the log by {behind} events"
        except Exception as err:
            problems["postgres"] = f"projection state unreadable: {err!r}"
    body = {"status": "ready" if not problems else "not ready", **body, "problems": problems}
    return JSONResponse(body, status_code=200 if not problems else 503)
