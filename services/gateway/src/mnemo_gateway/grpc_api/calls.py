"""What every RPC goes through: its span, its authorisation, and its refusals as gRPC statuses.

A refusal (``mnemo_schema.errors.Refusal``, the one error type of every edge, or a pydantic
``ValidationError`` turned into one by ``refusal``) becomes the canonical status for its HTTP
status, with ``google.rpc.Status`` details: ``BadRequest`` naming the field (the field HTTP's 422
names), ``ErrorInfo`` with a reason, and ``RetryInfo`` on ``UNAVAILABLE`` and
``RESOURCE_EXHAUSTED``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import ValidationError

from mnemo_runtime.logging import get_logger
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_schema.errors import Refusal, refusal

log = get_logger("mnemo.gateway.grpc")
_tracer = tracer("mnemo.gateway")

DOMAIN = "mnemo"
RETRY_AFTER_S = 1

# HTTP status of a refusal -> (gRPC code, ErrorInfo reason)
_CODES: dict[int, tuple[int, str]] = {
    400: (code_pb2.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    401: (code_pb2.UNAUTHENTICATED, "UNAUTHENTICATED"),
    403: (code_pb2.PERMISSION_DENIED, "PERMISSION_DENIED"),
    404: (code_pb2.NOT_FOUND, "NOT_FOUND"),
    409: (code_pb2.ALREADY_EXISTS, "ALREADY_EXISTS"),
    413: (code_pb2.RESOURCE_EXHAUSTED, "TOO_LARGE"),
    422: (code_pb2.INVALID_ARGUMENT, "INVALID_FIELD"),
    429: (code_pb2.RESOURCE_EXHAUSTED, "RATE_LIMITED"),
    503: (code_pb2.UNAVAILABLE, "UNAVAILABLE"),
    504: (code_pb2.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"),
}
_RETRYABLE = frozenset({code_pb2.UNAVAILABLE, code_pb2.RESOURCE_EXHAUSTED})


def status_of(r: Refusal) -> grpc.Status:
    """The gRPC status, with its rich details, of a refusal."""
    code, reason = _CODES.get(r.status, (code_pb2.INTERNAL, "INTERNAL"))
    details: list[any_pb2.Any] = []
    if code == code_pb2.INVALID_ARGUMENT and r.field:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=r.field, description=r.detail)
            ]
        )
        details.append(_packed(bad))
    info = error_details_pb2.ErrorInfo(
        reason=reason,
        domain=DOMAIN,
        metadata={"http_status": str(r.status), "field": r.field or ""},
    )
    details.append(_packed(info))
    if code in _RETRYABLE and r.status != 413:
        retry = error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(seconds=RETRY_AFTER_S)
        )
        details.append(_packed(retry))
    return rpc_status.to_status(status_pb2.Status(code=code, message=r.detail, details=details))


def _packed(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


class Authorizer(Protocol):
    """Checks a call's credentials (``authorization`` metadata) for one operation on its ids."""

    async def __call__(
        self, metadata: Mapping[str, str], operation: str, ids: Mapping[str, str]
    ) -> None:
        """Raise a Refusal (401 / 403 / 404) unless allowed."""
        ...


async def allow_all(metadata: Mapping[str, str], operation: str, ids: Mapping[str, str]) -> None:
    """No authorisation configured: every call goes through."""
    del metadata, operation, ids


Req = TypeVar("Req")
Resp = TypeVar("Resp")
Ids = Callable[[Any], Mapping[str, str]]


def _metadata(context: grpc.aio.ServicerContext[Any, Any]) -> dict[str, str]:
    return {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}


class Calls:
    """Wraps servicer methods: tracing from metadata, authorisation, refusals as statuses."""

    def __init__(self, authorize: Authorizer = allow_all) -> None:
        self.authorize = authorize

    def unary(
        self, operation: str, ids: Ids
    ) -> Callable[[Callable[..., Awaitable[Resp]]], Callable[..., Awaitable[Resp]]]:
        """For a unary (or client-streaming) method: ``ids`` reads the request's path ids."""

        def wrap(method: Callable[..., Awaitable[Resp]]) -> Callable[..., Awaitable[Resp]]:
            @functools.wraps(method)
            async def call(self_: Any, request: Any, context: Any) -> Resp:
                metadata = _metadata(context)
                with _tracer.start_as_current_span(
                    f"grpc {operation}", context=extract_context(metadata), kind=SpanKind.SERVER
                ) as span:
                    try:
                        await self.authorize(metadata, operation, _ids(ids, request))
                        return await method(self_, request, context)
                    except ValidationError as err:
                        refused = refusal(err)
                    except Refusal as err:
                        refused = err
                    except Exception:
                        log.exception("grpc.failed", operation=operation)
                        refused = Refusal(500, "the call failed inside the gateway; see its log")
                    span.set_status(StatusCode.ERROR)
                    await context.abort_with_status(status_of(refused))
                    raise AssertionError("abort_with_status returns only by raising")

            return call

        return wrap

    def streaming(
        self, operation: str, ids: Ids
    ) -> Callable[[Callable[..., AsyncIterator[Resp]]], Callable[..., AsyncIterator[Resp]]]:
        """For a server-streaming method."""

        def wrap(method: Callable[..., AsyncIterator[Resp]]) -> Callable[..., AsyncIterator[Resp]]:
            @functools.wraps(method)
            async def call(self_: Any, request: Any, context: Any) -> AsyncIterator[Resp]:
                metadata = _metadata(context)
                with _tracer.start_as_current_span(
                    f"grpc {operation}", context=extract_context(metadata), kind=SpanKind.SERVER
                ) as span:
                    try:
                        await self.authorize(metadata, operation, _ids(ids, request))
                        async for item in method(self_, request, context):
                            yield item
                        return
                    except ValidationError as err:
                        refused = refusal(err)
                    except Refusal as err:
                        refused = err
                    except Exception:
                        log.exception("grpc.failed", operation=operation)
                        refused = Refusal(500, "the call failed inside the gateway; see its log")
                    span.set_status(StatusCode.ERROR)
                    await context.abort_with_status(status_of(refused))

            return call

        return wrap


def _ids(ids: Ids, request: Any) -> Mapping[str, str]:
    # A client-streaming call's ids are read from each of its requests instead.
    return {} if hasattr(request, "__aiter__") else ids(request)
