"""DialecticService: chat, whole or streamed, through the HTTP route's own query building.

The call's deadline and cancellation reach the dialectic: the query carries a cancel subject,
so a client that goes away stops the model call instead of leaving it to run to its end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from google.protobuf import json_format, struct_pb2
from mnemo.v1 import dialectic_pb2 as dp
from mnemo.v1 import dialectic_pb2_grpc

from mnemo_gateway.deps import Services
from mnemo_gateway.grpc_api import convert as cv
from mnemo_gateway.grpc_api.calls import Calls
from mnemo_gateway.routes.dialectic import CHAT_TIMEOUT_S, ChatBody, chat_query
from mnemo_runtime import rpc
from mnemo_schema import subjects
from mnemo_schema.dialectic_queries import ChatAnswer, ChatChunk

P = "workspaces/*/peers/*"


def _evidence(value: Any) -> struct_pb2.Struct | None:
    if value is None:
        return None
    out = struct_pb2.Struct()
    json_format.ParseDict(value.model_dump(mode="json"), out)
    return out


def _body(request: Any, stream: bool) -> ChatBody:
    return ChatBody(
        query=request.query,
        session_id=cv.optional(request, "session_id"),
        target=cv.optional(request, "target"),
        stream=stream,
        reasoning_level=request.reasoning_level or "low",
        include_evidence=request.include_evidence,
    )


def _timeout(context: Any) -> float:
    remaining = context.time_remaining()
    return CHAT_TIMEOUT_S if remaining is None else min(CHAT_TIMEOUT_S, max(0.1, remaining))


def dialectic_servicer(svc: Services, calls: Calls) -> dialectic_pb2_grpc.DialecticServiceServicer:
    class Dialectic(dialectic_pb2_grpc.DialecticServiceServicer):
        @calls.unary("Chat", lambda r: cv.ids_of(r.name, P))
        async def Chat(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            ws = ids["workspace_id"]
            query = await chat_query(ws, ids["peer_id"], _body(request, False), svc)
            answer = await rpc.call(
                svc.nc,
                subjects.query_subject(ws, "chat"),
                query,
                ChatAnswer,
                _timeout(context),
                cancellable=True,
            )
            return dp.ChatResponse(content=answer.content, evidence=_evidence(answer.evidence))

        @calls.streaming("StreamChat", lambda r: cv.ids_of(r.name, P))
        async def StreamChat(self, request: Any, context: Any) -> AsyncIterator[Any]:
            ids = cv.ids_of(request.name, P)
            ws = ids["workspace_id"]
            query = await chat_query(ws, ids["peer_id"], _body(request, True), svc)
            chunks = rpc.stream(
                svc.nc,
                subjects.query_subject(ws, "chat"),
                query,
                ChatChunk,
                _timeout(context),
                cancellable=True,
            )
            async for chunk in chunks:
                yield dp.StreamChatResponse(
                    delta=chunk.delta.content or "",
                    done=chunk.done,
                    evidence=_evidence(chunk.evidence),
                )

    return Dialectic()
