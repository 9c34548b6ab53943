"""The HTTP wiring of the authority: a check at the edge and one app-wide FastAPI dependency.

The edge (``app.Edge``, in front of the direct path for posting messages and of FastAPI) answers
401 to any request without a valid key, except on the public paths, before a byte of the body is
read: nobody unauthenticated learns even how a request would have been refused. The dependency,
which every route gets, then authorises the key for the matched route's template and its ids
(403), so the route modules know nothing of keys; its principal is ``request.state.principal``.
The direct path authorises its one route itself, with the same call.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.types import Scope

from mnemo_gateway.auth.authority import Authority, bearer
from mnemo_gateway.auth.keyring import unauthorised
from mnemo_gateway.auth.policy import PUBLIC_PATHS, rule_of
from mnemo_schema.errors import Refusal


def header_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The bearer key of raw ASGI headers; a 401 if there are several Authorization headers."""
    values = [v for k, v in headers if k == b"authorization"]
    if len(values) > 1:
        raise unauthorised("send one Authorization header")
    return bearer(values[0].decode("latin-1")) if values else None


def refused(authority: Authority, scope: Scope) -> Refusal | None:
    """The 401 for an HTTP request without a valid key (None: let it through to routing).

    Called by the edge before anything else reads the request; public paths pass.
    """
    if not authority.enabled or scope["path"] in PUBLIC_PATHS:
        return None
    try:
        authority.authenticate(header_token(scope["headers"]))
    except Refusal as err:
        return err
    return None


async def authorise_request(request: Request) -> None:
    """Every route's dependency: the caller's principal for this route and its ids, or 401/403."""
    authority: Authority = request.app.state.authority
    if not authority.enabled:
        return
    route = request.scope.get("route")
    operation = (request.method, str(getattr(route, "path", request.url.path)))
    ids: dict[str, str | None] = dict(request.path_params)
    rule = rule_of(operation)
    for param in rule.params() if rule is not None else ():
        where, _, name = param.partition(".")
        if where == "query":
            ids[param] = request.query_params.get(name)
        elif where == "body":
            ids[param] = _text(await _json(request), name)
    token = header_token(request.scope["headers"])
    request.state.principal = authority.authorise(token, operation, ids)


async def _json(request: Request) -> Any:
    # FastAPI has read and parsed the body of a route that takes one before its dependencies run.
    try:
        return await request.json()
    except (ValueError, UnicodeDecodeError):
        return None


def _text(body: Any, name: str) -> str | None:
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


def secured(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (an OpenAPI document) with bearer keys declared on every non-public operation."""
    components = schema.setdefault("components", {})
    if "bearer" in components.get("securitySchemes", {}):
        return schema  # FastAPI caches the document: it is marked once
    components.setdefault("securitySchemes", {})["bearer"] = {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            rule = rule_of((method.upper(), path))
            if rule is None or not rule.public:
                operation["security"] = [{"bearer": []}]
    return schema
