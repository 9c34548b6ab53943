"""Error bodies: ``{"detail": "<field>: <reason>", "field": ..., "errors": [...]}``.

The SDK surfaces ``detail`` as the exception message, so it names the field in plain words.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    """An error answered with ``status`` and a body naming ``field``."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def api_error_response(exc: ApiError) -> JSONResponse:
    """The body and status of a refusal raised as ApiError."""
    return JSONResponse({"detail": exc.detail, "field": exc.field}, status_code=exc.status)


def install(app: FastAPI) -> None:
    """Register the handlers that shape every error body."""

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return api_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": _loc(e["loc"]), "message": e["msg"], "type": e["type"]} for e in exc.errors()
        ]
        first = errors[0] if errors else {"field": "body", "message": "invalid request"}
        status = 413 if _too_many_messages(exc) else 422
        return JSONResponse(
            {
                "detail": f"{first['field']}: {first['message']}",
                "field": first["field"],
                "errors": errors,
            },
            status_code=status,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)


def _too_many_messages(exc: RequestValidationError) -> bool:
    return any(e["type"] == "too_long" and _loc(e["loc"]) == "messages" for e in exc.errors())
