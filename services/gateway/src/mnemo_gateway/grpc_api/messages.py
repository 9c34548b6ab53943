"""MessageService: posting (one batch, or a stream of batches each acknowledged once stored),
listing, reading and updating messages, through the HTTP routes' own functions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from mnemo.v1 import messages_pb2 as mp
from mnemo.v1 import messages_pb2_grpc

from mnemo_gateway import api
from mnemo_gateway.deps import Services
from mnemo_gateway.grpc_api import convert as cv
from mnemo_gateway.grpc_api.calls import Calls
from mnemo_gateway.grpc_api.entities import _list_body, _page
from mnemo_gateway.routes import messages
from mnemo_schema.commands import MAX_BATCH
from mnemo_schema.errors import Refusal

S = "workspaces/*/sessions/*"
M = "workspaces/*/sessions/*/messages/*"


def _batch(request: Any) -> api.MessageBatchCreate:
    if len(request.messages) > MAX_BATCH:
        raise Refusal(413, f"messages: at most {MAX_BATCH} in a batch", "messages")
    if len(request.request_id) > messages.IDEMPOTENCY_KEY_MAX:
        raise Refusal(
            422, f"request_id: at most {messages.IDEMPOTENCY_KEY_MAX} characters", "request_id"
        )
    # Validated as one body, so a refusal names the field as HTTP does (messages.3.content).
    return api.MessageBatchCreate.model_validate(
        {
            "messages": [
                {
                    "peer_id": m.peer_id,
                    "content": m.content,
                    "metadata": cv.struct_of(m, "metadata"),
                    "configuration": cv.struct_of(m, "configuration"),
                    "created_at": cv.time_of(m, "create_time"),
                }
                for m in request.messages
            ]
        }
    )


def message_servicer(svc: Services, calls: Calls) -> messages_pb2_grpc.MessageServiceServicer:
    async def post(request: Any) -> list[api.MessageOut]:
        ids = cv.ids_of(request.parent, S, "parent")
        batch = _batch(request)
        return await messages.post_messages(
            ids["workspace_id"], ids["session_id"], batch, svc, request.request_id or None
        )

    class Messages(messages_pb2_grpc.MessageServiceServicer):
        @calls.unary("CreateMessages", lambda r: cv.ids_of(r.parent, S, "parent"))
        async def CreateMessages(self, request: Any, context: Any) -> Any:
            return mp.CreateMessagesResponse(messages=[cv.message(m) for m in await post(request)])

        @calls.streaming("StreamMessages", lambda r: {})
        async def StreamMessages(
            self, request_iterator: Any, context: Any
        ) -> AsyncIterator[mp.StreamMessagesResponse]:
            # One batch at a time, in order: a batch is stored whole before the next is read,
            # so a stream cut short leaves exactly the acknowledged batches (and at most the one
            # in hand, which its request_id makes safe to send again).
            stored = 0
            metadata = {
                k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)
            }
            async for request in request_iterator:
                ids = cv.ids_of(request.parent, S, "parent")
                await calls.authorize(metadata, "StreamMessages", ids)
                posted = await post(request)
                stored += 1
                yield mp.StreamMessagesResponse(
                    request_id=request.request_id,
                    batches_stored=stored,
                    message_ids=[m.id for m in posted],
                )

        @calls.unary("ListMessages", lambda r: cv.ids_of(r.parent, S, "parent"))
        async def ListMessages(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.parent, S, "parent")
            paging = _page(request)
            page = await messages.list_messages(
                ids["workspace_id"], ids["session_id"], svc, paging, _list_body(request)
            )
            return mp.ListMessagesResponse(
                messages=[cv.message(m) for m in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

        @calls.unary("GetMessage", lambda r: cv.ids_of(r.name, M))
        async def GetMessage(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, M)
            out = await messages.get_message(
                ids["workspace_id"], ids["session_id"], ids["message_id"], svc
            )
            return mp.GetMessageResponse(message=cv.message(out))

        @calls.unary("UpdateMessage", lambda r: cv.ids_of(r.name, M))
        async def UpdateMessage(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, M)
            body = api.MessageUpdate(metadata=cv.struct_of(request, "metadata") or {})
            out = await messages.update_message(
                ids["workspace_id"], ids["session_id"], ids["message_id"], body, svc
            )
            return mp.UpdateMessageResponse(message=cv.message(out))

    return Messages()
