"""Error bodies: ``{"detail": "<field>: <reason>", "field": ..., "errors": [...]}``.

The SDK surfaces ``detail`` as the exception message, so it names the field in plain words.
Refusals are ``mnemo_schema.errors.Refusal``, the one error type of every edge.
"""

from __future__ import annotations

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from mnemo_schema.errors import Refusal, field_errors, refusal


def refusal_response(exc: Refusal) -> JSONResponse:
    """The body and status of a refusal (a 401 also says which scheme it asks for)."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(
        {"detail": exc.detail, "field": exc.field}, status_code=exc.status, headers=headers
    )


def install(app: FastAPI) -> None:
    """Register the handlers that shape every error body."""

    @app.exception_handler(Refusal)
    async def refused(_: Request, exc: Refusal) -> JSONResponse:
        return refusal_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = field_errors(exc.errors())
        first = errors[0] if errors else {"field": "body", "message": "invalid request"}
        status = 413 if _too_many_messages(errors) else 422
        return JSONResponse(
            {
                "detail": f"{first['field']}: {first['message']}",
                "field": first["field"],
                "errors": errors,
            },
            status_code=status,
        )

    @app.exception_handler(ValidationError)
    async def unvalidated(_: Request, exc: ValidationError) -> JSONResponse:
        # A model built inside a route (a command, a query) refused what the request gave it:
        # the request's fault, named as the model names it, never a 500.
        return refusal_response(refusal(exc))

    async def database_away(_: Request, exc: Exception) -> JSONResponse:
        # Postgres restarting or unreachable: the request may succeed in a moment, and a client
        # (the SDK among them) tries a 503 again.
        return JSONResponse(
            {"detail": f"the database is unavailable ({type(exc).__name__}); try again"},
            status_code=503,
            headers={"Retry-After": "1"},
        )

    for away in (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout):
        app.add_exception_handler(away, database_away)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)


def _too_many_messages(errors: list[dict[str, str]]) -> bool:
    return any(e["type"] == "too_long" and e["field"] == "messages" for e in errors)
