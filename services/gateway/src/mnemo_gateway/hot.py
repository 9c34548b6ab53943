"""A direct path for the busiest routes: ``POST .../sessions/{session_id}/messages`` (writes)
and ``GET .../sessions/{session_id}/context`` (the read an agent makes before each turn).

The route's own endpoint function is called without FastAPI's router, middleware stack and
dependency resolution, which cost about 1 ms of gateway CPU per request (measured: close to half
of what the gateway spent on a single-message POST, and 1.2 of the 2.8 ms it spent on a
get_context). A context's reply is serialized once, not dumped, validated again against the
response model and encoded as FastAPI does.

Only a request the route would accept takes this path. Anything else (a content type other than
JSON, a body that does not parse or validate, an unusual Idempotency-Key header, a query
parameter that is unknown, repeated or invalid, one of the context's rarer options, a key that
does not reach the session) goes on to FastAPI with its body replayed, so every refusal is
FastAPI's own, shaped by ``errors``. The key is authorised by the same call FastAPI's dependency
makes, with the same ids. The routes, their OpenAPI entries and their server spans stay
FastAPI's; this path opens a server span of the same name.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any, get_type_hints
from urllib.parse import parse_qsl

from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemo_gateway import errors
from mnemo_gateway.api import MessageBatchCreate
from mnemo_gateway.auth.gate import header_token
from mnemo_gateway.auth.policy import rule_of
from mnemo_gateway.deps import Services
from mnemo_gateway.routes import context
from mnemo_gateway.routes.messages import IDEMPOTENCY_KEY_MAX, create_messages, router
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_schema.errors import Refusal
from mnemo_schema.ids import ID_MAX_LENGTH

ROUTE = router.prefix  # the create route is the router's root
# FastAPI records the matched route in the scope; this path does too, for the latency metric.
_CREATE = next(r for r in router.routes if getattr(r, "path", None) == ROUTE)
_OPERATION = ("POST", ROUTE)
# Only ids FastAPI would accept (``deps.PathId``); any other path gets FastAPI's own 422.
_ID = rf"([A-Za-z0-9_-]{{1,{ID_MAX_LENGTH}}})"
_PATH = re.compile(rf"/v3/workspaces/{_ID}/sessions/{_ID}/messages")
_tracer = tracer("mnemo.gateway")

CONTEXT = context.router.prefix + "/sessions/{session_id}/context"
_CONTEXT = next(r for r in context.router.routes if getattr(r, "path", None) == CONTEXT)
_CONTEXT_OPERATION = ("GET", CONTEXT)
_CONTEXT_PATH = re.compile(rf"/v3/workspaces/{_ID}/sessions/{_ID}/context")
# The context's options that FastAPI answers itself: each reads more before the context.
_CONTEXT_RARE = frozenset({"scope", "sessions"})


def _query_model(endpoint: Any, skip: frozenset[str]) -> type[BaseModel]:
    """The endpoint's query parameters as one model: the same annotations (FastAPI's ``Query``
    is pydantic's ``FieldInfo``), so a value is accepted, converted and refused as FastAPI would,
    validating the strings of the query the same lax way."""
    hints = get_type_hints(endpoint, include_extras=True)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(endpoint).parameters.items():
        if name in ("workspace_id", "session_id", "svc") or name in skip:
            continue
        fields[name] = (hints[name], param.default)
    return create_model(
        f"{endpoint.__name__}_query",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )


_CONTEXT_QUERY = _query_model(context.session_context, _CONTEXT_RARE)


class HotPath:
    """ASGI app: posts messages directly when it can, hands everything else to ``app``."""

    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await self._get(scope, receive, send)
            return
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        match = _PATH.fullmatch(scope["path"])
        if match is None:
            await self.app(scope, receive, send)
            return
        workspace_id, session_id = match.group(1), match.group(2)
        body, complete = await _read_body(receive)
        accepted = _accepted(scope, body) if complete else None
        ids: dict[str, str | None] = {"workspace_id": workspace_id, "session_id": session_id}
        if accepted is None or not self._authorised(scope, ids):
            await self.app(scope, _replay(body, complete, receive), send)
            return
        batch, key = accepted
        scope["route"] = _CREATE
        with self._span(scope, "POST", ROUTE) as span:
            try:
                response = await create_messages(
                    workspace_id, session_id, batch, self._services, key
                )
            except Refusal as err:
                response = errors.refusal_response(err)
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.set_status(StatusCode.ERROR)
            await response(scope, receive, send)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _CONTEXT_PATH.fullmatch(scope["path"])
        query = _context_query(scope) if match is not None else None
        if match is None or query is None:
            await self.app(scope, receive, send)
            return
        workspace_id, session_id = match.group(1), match.group(2)
        raw, params = query
        ids = {"workspace_id": workspace_id, "session_id": session_id}
        if not self._authorised(scope, ids, _CONTEXT_OPERATION, raw):
            await self.app(scope, receive, send)
            return
        scope["route"] = _CONTEXT
        with self._span(scope, "GET", CONTEXT) as span:
            response: Response
            try:
                out = await context.session_context(
                    workspace_id, session_id, self._services, **params
                )
            except Refusal as err:
                response = errors.refusal_response(err)
            else:
                response = Response(out.model_dump_json().encode(), media_type="application/json")
            span.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                span.set_status(StatusCode.ERROR)
            await response(scope, receive, send)

    def _span(self, scope: Scope, method: str, route: str) -> Any:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        return _tracer.start_as_current_span(
            f"{method} {route}",
            context=extract_context(headers),
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "http.route": route,
                "url.path": scope["path"],
            },
        )

    def _authorised(
        self,
        scope: Scope,
        ids: dict[str, str | None],
        operation: tuple[str, str] = _OPERATION,
        query: dict[str, str] | None = None,
    ) -> bool:
        """Whether the key reaches the route, as ``auth.gate.authorise_request`` decides it: the
        path's ids and the query parameters the route's rule reads (a rule that reads the body
        is FastAPI's to apply)."""
        rule = rule_of(operation)
        ids = dict(ids)
        for param in rule.params() if rule is not None else ():
            where, _, name = param.partition(".")
            if where == "body":
                return False
            if where == "query":
                ids[param] = (query or {}).get(name)
        try:
            self._services.authority.authorise(header_token(scope["headers"]), operation, ids)
        except Refusal:
            return False
        return True


def _context_query(scope: Scope) -> tuple[dict[str, str], dict[str, Any]] | None:
    """The context's query parameters, raw and validated; None if FastAPI should answer (a
    parameter it refuses, one given twice, or one of the rarer options)."""
    # As Starlette reads them.
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    raw = dict(pairs)
    if len(raw) != len(pairs) or not _CONTEXT_RARE.isdisjoint(raw):
        return None
    try:
        valid = _CONTEXT_QUERY.model_validate(raw)
    except ValidationError:
        return None
    return raw, {name: getattr(valid, name) for name in type(valid).model_fields}


def _accepted(scope: Scope, body: bytes) -> tuple[MessageBatchCreate, str | None] | None:
    """The validated batch and Idempotency-Key, or None if FastAPI should answer the request."""
    if scope.get("query_string"):
        return None  # the route takes no query parameter: FastAPI refuses them by name
    content_types: list[bytes] = []
    keys: list[bytes] = []
    for name, value in scope["headers"]:
        if name == b"content-type":
            content_types.append(value)
        elif name == b"idempotency-key":
            keys.append(value)
    if len(content_types) != 1 or len(keys) > 1:
        return None
    if content_types[0].split(b";", 1)[0].strip().lower() != b"application/json":
        return None
    key = keys[0].decode("latin-1") if keys else None
    if key is not None and len(key) > IDEMPOTENCY_KEY_MAX:
        return None
    try:
        # As FastAPI does it: the JSON parsed, then validated in Python mode.
        parsed: Any = json.loads(body)
        return MessageBatchCreate.model_validate(parsed), key
    except (ValueError, ValidationError):
        return None


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body, and False if the client went away before sending all of it."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), True


def _replay(body: bytes, complete: bool, receive: Receive) -> Receive:
    """A receive channel that gives ``body`` first, then whatever ``receive`` gives."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if complete:
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}
        return await receive()

    return replayed
