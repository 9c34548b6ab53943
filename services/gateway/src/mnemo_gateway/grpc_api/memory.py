"""ConclusionService, ContextService, QueueService, DreamService: the HTTP routes' own functions
behind them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from mnemo.v1 import conclusions_pb2 as cp
from mnemo.v1 import conclusions_pb2_grpc, context_pb2_grpc, dreams_pb2_grpc, queue_pb2_grpc
from mnemo.v1 import context_pb2 as xp
from mnemo.v1 import dreams_pb2 as dp
from mnemo.v1 import queue_pb2 as qp
from mnemo.v1 import resources_pb2 as pb

from mnemo_gateway.api import Page
from mnemo_gateway.deps import Services
from mnemo_gateway.grpc_api import convert as cv
from mnemo_gateway.grpc_api.calls import Calls
from mnemo_gateway.grpc_api.entities import _list_body, _page
from mnemo_gateway.routes import cards, conclusions, context, dreams, queue, summaries
from mnemo_gateway.routes.summaries import SummaryOut
from mnemo_schema.context_queries import DEFAULT_CONTEXT_TOKENS

W, P, S = "workspaces/*", "workspaces/*/peers/*", "workspaces/*/sessions/*"
C = "workspaces/*/conclusions/*"
# How often a watched queue is looked at.
WATCH_EVERY_S = 0.25


def _conclusion(r: conclusions.ConclusionOut, ws: str) -> pb.Conclusion:
    return pb.Conclusion(
        name=f"workspaces/{ws}/conclusions/{r.id}",
        id=r.id,
        content=r.content,
        observer_id=r.observer_id,
        observed_id=r.observed_id,
        session_id=r.session_id,
        level=r.level,
        source_ids=r.source_ids,
        times_derived=r.times_derived,
        create_time=cv.to_time(r.created_at),
    )


def _summary(s: SummaryOut | None) -> pb.Summary | None:
    if s is None:
        return None
    return pb.Summary(
        content=s.content,
        message_id=s.message_id,
        summary_type=s.summary_type,
        create_time=cv.to_time(cv.parse_time(s.created_at)),
        token_count=s.token_count,
    )


def _id(value: str | None, field: str) -> str | None:
    return None if value is None else cv.entity(value, field)


def _rep(options: Any) -> dict[str, Any]:
    """The representation options as the routes' keyword arguments."""
    return {
        "search_query": cv.optional(options, "search_query"),
        "search_top_k": cv.optional(options, "search_top_k"),
        "search_max_distance": cv.optional(options, "search_max_distance"),
        "include_most_frequent": cv.optional(options, "include_most_frequent"),
        "max_conclusions": cv.optional(options, "max_conclusions"),
    }


def conclusion_servicer(
    svc: Services, calls: Calls
) -> conclusions_pb2_grpc.ConclusionServiceServicer:
    class Conclusions(conclusions_pb2_grpc.ConclusionServiceServicer):
        @calls.unary("CreateConclusions", lambda r: cv.ids_of(r.parent, W, "parent"))
        async def CreateConclusions(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            body = conclusions.ConclusionBatch.model_validate(
                {
                    "conclusions": [
                        {
                            "content": c.content,
                            "observer_id": c.observer_id,
                            "observed_id": c.observed_id,
                            "session_id": cv.optional(c, "session_id"),
                        }
                        for c in request.conclusions
                    ]
                }
            )
            out = await conclusions.create_conclusions(ws, body, svc)
            return cp.CreateConclusionsResponse(conclusions=[_conclusion(c, ws) for c in out])

        @calls.unary("ListConclusions", lambda r: cv.ids_of(r.parent, W, "parent"))
        async def ListConclusions(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            paging = _page(request)
            listed = _list_body(request)
            body = None if listed is None else conclusions.ConclusionList(filters=listed.filters)
            page: Page[Any] = await conclusions.list_conclusions(ws, svc, paging, body)
            return cp.ListConclusionsResponse(
                conclusions=[_conclusion(c, ws) for c in page.items],
                next_page_token=cv.next_token(paging.page, page.pages),
                total_size=page.total,
            )

        @calls.unary("QueryConclusions", lambda r: cv.ids_of(r.parent, W, "parent"))
        async def QueryConclusions(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            body = conclusions.ConclusionQuery(
                query=request.query,
                top_k=request.top_k or 10,
                distance=cv.optional(request, "distance"),
                filters=cv.struct_of(request, "filter"),
            )
            out = await conclusions.query_conclusions(ws, body, svc)
            return cp.QueryConclusionsResponse(conclusions=[_conclusion(c, ws) for c in out])

        @calls.unary("GetConclusion", lambda r: cv.ids_of(r.name, C))
        async def GetConclusion(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, C)
            out = await conclusions.get_conclusion(ids["workspace_id"], ids["conclusion_id"], svc)
            return cp.GetConclusionResponse(conclusion=_conclusion(out, ids["workspace_id"]))

        @calls.unary("DeleteConclusion", lambda r: cv.ids_of(r.name, C))
        async def DeleteConclusion(self, request: Any, context: Any) -> Any:
            ids = cv.ids_of(request.name, C)
            await conclusions.delete_conclusion(ids["workspace_id"], ids["conclusion_id"], svc)
            return cp.DeleteConclusionResponse()

    return Conclusions()


def context_servicer(svc: Services, calls: Calls) -> context_pb2_grpc.ContextServiceServicer:
    class Context(context_pb2_grpc.ContextServiceServicer):
        @calls.unary("GetSessionContext", lambda r: cv.ids_of(r.name, S))
        async def GetSessionContext(self, request: Any, context_: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            tokens = cv.optional(request, "tokens")
            summary = cv.optional(request, "summary")
            out = await context.session_context(
                ids["workspace_id"],
                ids["session_id"],
                svc,
                tokens=DEFAULT_CONTEXT_TOKENS if tokens is None else tokens,
                summary=True if summary is None else summary,
                peer_target=_id(cv.optional(request, "peer_target"), "peer_target"),
                peer_perspective=_id(cv.optional(request, "peer_perspective"), "peer_perspective"),
                limit_to_session=request.limit_to_session,
                **_rep(request.representation),
            )
            return xp.GetSessionContextResponse(
                id=out.id,
                messages=[cv.message(m) for m in out.messages],
                summary=_summary(out.summary),
                peer_representation=out.peer_representation,
                peer_card=out.peer_card or [],
                has_peer_card=out.peer_card is not None,
            )

        @calls.unary("GetPeerRepresentation", lambda r: cv.ids_of(r.name, P))
        async def GetPeerRepresentation(self, request: Any, context_: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            body = context.PeerRepresentationIn(
                session_id=cv.optional(request, "session_id"),
                target=cv.optional(request, "target"),
                **_rep(request.representation),
            )
            out = await context.peer_representation(ids["workspace_id"], ids["peer_id"], body, svc)
            return xp.GetPeerRepresentationResponse(representation=out.representation)

        @calls.unary("GetPeerContext", lambda r: cv.ids_of(r.name, P))
        async def GetPeerContext(self, request: Any, context_: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            out = await context.peer_context(
                ids["workspace_id"],
                ids["peer_id"],
                svc,
                target=_id(cv.optional(request, "target"), "target"),
                **_rep(request.representation),
            )
            return xp.GetPeerContextResponse(
                peer_id=out.peer_id,
                target_id=out.target_id,
                representation=out.representation,
                peer_card=out.peer_card or [],
                has_peer_card=out.peer_card is not None,
            )

        @calls.unary("GetPeerCard", lambda r: cv.ids_of(r.name, P))
        async def GetPeerCard(self, request: Any, context_: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            out = await cards.get_peer_card(
                ids["workspace_id"],
                ids["peer_id"],
                svc,
                target=_id(cv.optional(request, "target"), "target"),
            )
            card = out.peer_card
            return xp.GetPeerCardResponse(peer_card=card or [], has_peer_card=card is not None)

        @calls.unary("SetPeerCard", lambda r: cv.ids_of(r.name, P))
        async def SetPeerCard(self, request: Any, context_: Any) -> Any:
            ids = cv.ids_of(request.name, P)
            out = await cards.set_peer_card(
                ids["workspace_id"],
                ids["peer_id"],
                cards.PeerCardIn(peer_card=list(request.peer_card)),
                svc,
                target=_id(cv.optional(request, "target"), "target"),
            )
            card = out.peer_card
            return xp.SetPeerCardResponse(peer_card=card or [], has_peer_card=card is not None)

        @calls.unary("SearchMessages", lambda r: cv.search_scope(r.parent))
        async def SearchMessages(self, request: Any, context_: Any) -> Any:
            ids = cv.search_scope(request.parent)
            body = context.SearchIn(
                query=request.query,
                filters=cv.struct_of(request, "filter"),
                limit=request.limit or 10,
            )
            ws = ids["workspace_id"]
            if "session_id" in ids:
                out = await context.search_session(ws, ids["session_id"], body, svc)
            elif "peer_id" in ids:
                out = await context.search_peer(ws, ids["peer_id"], body, svc)
            else:
                out = await context.search_workspace(ws, body, svc)
            return xp.SearchMessagesResponse(messages=[cv.message(m) for m in out])

        @calls.unary("GetSummaries", lambda r: cv.ids_of(r.name, S))
        async def GetSummaries(self, request: Any, context_: Any) -> Any:
            ids = cv.ids_of(request.name, S)
            out = await summaries.get_summaries(ids["workspace_id"], ids["session_id"], svc)
            return xp.GetSummariesResponse(
                id=out.id,
                short_summary=_summary(out.short_summary),
                long_summary=_summary(out.long_summary),
            )

    return Context()


def _queue(r: Any) -> dict[str, str]:
    # A queue status names its workspace, and maybe the session a session key may see.
    ids = cv.ids_of(r.parent, W, "parent")
    if r.HasField("session_id"):
        ids["session_id"] = r.session_id
    return ids


def _counts(status: Any) -> qp.QueueCounts:
    return qp.QueueCounts(
        total_work_units=status.total_work_units,
        completed_work_units=status.completed_work_units,
        in_progress_work_units=status.in_progress_work_units,
        pending_work_units=status.pending_work_units,
    )


def queue_servicer(svc: Services, calls: Calls) -> queue_pb2_grpc.QueueServiceServicer:
    async def status(request: Any) -> Any:
        ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
        return await queue.queue_status(
            ws,
            svc,
            observer_id=_id(cv.optional(request, "observer_id"), "observer_id"),
            sender_id=_id(cv.optional(request, "sender_id"), "sender_id"),
            session_id=_id(cv.optional(request, "session_id"), "session_id"),
        )

    def reply(kind: Any, got: Any) -> Any:
        return kind(
            counts=_counts(got), sessions={k: _counts(v) for k, v in (got.sessions or {}).items()}
        )

    class Queue(queue_pb2_grpc.QueueServiceServicer):
        @calls.unary("GetQueueStatus", _queue)
        async def GetQueueStatus(self, request: Any, context: Any) -> Any:
            return reply(qp.GetQueueStatusResponse, await status(request))

        @calls.streaming("WatchQueueStatus", _queue)
        async def WatchQueueStatus(
            self, request: Any, context: Any
        ) -> AsyncIterator[qp.WatchQueueStatusResponse]:
            last = None
            while True:
                got = await status(request)
                now = reply(qp.WatchQueueStatusResponse, got)
                if now != last:
                    yield now
                    last = now
                if not got.pending_work_units and not got.in_progress_work_units:
                    return
                await asyncio.sleep(WATCH_EVERY_S)

    return Queue()


def dream_servicer(svc: Services, calls: Calls) -> dreams_pb2_grpc.DreamServiceServicer:
    class Dreams(dreams_pb2_grpc.DreamServiceServicer):
        @calls.unary("ScheduleDream", lambda r: cv.ids_of(r.parent, W, "parent"))
        async def ScheduleDream(self, request: Any, context: Any) -> Any:
            ws = cv.ids_of(request.parent, W, "parent")["workspace_id"]
            body = dreams.ScheduleDreamIn(
                observer=request.observer,
                observed=cv.optional(request, "observed"),
                session_id=cv.optional(request, "session_id"),
                dream_type=request.dream_type or "omni",
            )
            await dreams.schedule_dream(ws, body, svc)
            return dp.ScheduleDreamResponse()

    return Dreams()
