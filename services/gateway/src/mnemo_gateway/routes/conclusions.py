"""/v3/workspaces/{w}/conclusions: observations as the SDK calls them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo_gateway.api import Page
from mnemo_gateway.deps import PageQ, PathId, Svc, order
from mnemo_gateway.recall import ScopeOption, sessions_of
from mnemo_gateway.routes.context import QUERY_TIMEOUT
from mnemo_gateway.store import CONCLUSIONS
from mnemo_runtime import rpc
from mnemo_schema import commands as c
from mnemo_schema import subjects
from mnemo_schema.commands import MAX_BATCH, NewConclusion
from mnemo_schema.context_queries import ObservationSearchQuery, ObservationSearchReply
from mnemo_schema.errors import Refusal, refusal
from mnemo_schema.filters import CONCLUSION_FIELDS, parse
from mnemo_schema.text import JsonObject, QueryText

# Where a field of the query came from in the request, for a 422 that names it.
_QUERY_FIELDS = {"observer": "filters.observer_id", "observed": "filters.observed_id"}
# Only observations resting on the confined sessions alone.
_IN_SESSIONS = " AND source_sessions <@ %(sessions)s::text[] AND cardinality(source_sessions) > 0"

router = APIRouter(prefix="/v3/workspaces/{workspace_id}/conclusions", tags=["conclusions"])

LIVE = "workspace = %s AND deleted_at IS NULL"


class ConclusionOut(BaseModel):
    id: str
    content: str
    observer_id: str
    observed_id: str
    session_id: str | None
    level: Literal["explicit", "deductive", "inductive", "contradiction"]
    source_ids: list[str]
    times_derived: int
    created_at: datetime


class ConclusionBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    conclusions: list[NewConclusion] = Field(min_length=1, max_length=MAX_BATCH)


class ConclusionQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: QueryText = Field(min_length=1, max_length=10_000)
    top_k: int = Field(default=10, ge=1, le=100)
    distance: float | None = Field(default=None, ge=0.0, le=1.0)
    filters: JsonObject | None = None
    scope: ScopeOption | None = None


class ConclusionList(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filters: JsonObject | None = None
    scope: ScopeOption | None = None


def view(r: dict[str, Any]) -> ConclusionOut:
    """An observation row as a conclusion."""
    return ConclusionOut(
        id=r["id"],
        content=r["content"],
        observer_id=r["observer"],
        observed_id=r["observed"],
        session_id=r["session_id"],
        level=r["level"],
        source_ids=list(r["premise_ids"]),
        times_derived=r["times_derived"],
        created_at=r["created_at"],
    )


@router.post("", response_model=list[ConclusionOut], status_code=201)
async def create_conclusions(
    workspace_id: PathId, body: ConclusionBatch, svc: Svc
) -> list[ConclusionOut]:
    """State facts directly; each becomes an explicit observation (origin: api)."""
    reply = await svc.bus.send(
        workspace_id, c.CreateConclusions(conclusions=body.conclusions), memory=True
    )
    rows = await svc.store.all(
        "SELECT o.* FROM unnest(%s::text[]) WITH ORDINALITY AS q(id, n)"
        " LEFT JOIN observation_aliases a ON a.workspace = %s AND a.alias_id = q.id"
        " JOIN observations o ON o.workspace = %s AND o.id = COALESCE(a.canonical_id, q.id)"
        " ORDER BY q.n",
        (reply.observation_ids, workspace_id, workspace_id),
    )
    return [view(r) for r in rows]


@router.post("/list", response_model=Page[ConclusionOut])
async def list_conclusions(
    workspace_id: PathId, svc: Svc, paging: PageQ, body: ConclusionList | None = None
) -> Page[ConclusionOut]:
    """Live conclusions, filtered (observer_id, observed_id, session_id, level, ...) and paged;
    with ``scope``, only those resting on the scope's sessions."""
    await svc.store.workspace(workspace_id)
    paging_order = order("created_at", paging) if paging.reverse else "created_at DESC"
    body = body or ConclusionList()
    sessions = await sessions_of(svc.store, workspace_id, scope=body.scope)
    live = "workspace = %(ws)s AND deleted_at IS NULL"
    params: dict[str, Any] = {"ws": workspace_id}
    if sessions is not None:
        live, params = live + _IN_SESSIONS, {**params, "sessions": sessions}
    rows, total, pages = await svc.store.page(
        CONCLUSIONS, live, params, body.filters, paging.page, paging.size, paging_order
    )
    items = [view(r) for r in rows]
    return Page(items=items, total=total, page=paging.page, size=paging.size, pages=pages)


@router.post("/query", response_model=list[ConclusionOut])
async def query_conclusions(
    workspace_id: PathId, body: ConclusionQuery, svc: Svc
) -> list[ConclusionOut]:
    """Semantic search inside one (observer_id, observed_id) representation.

    The context service, which holds the vector index, finds the nearest ids; the rows come
    from Postgres here.
    """
    filters = dict(body.filters or {})
    observer, observed = filters.pop("observer_id", None), filters.pop("observed_id", None)
    if not isinstance(observer, str) or not isinstance(observed, str):
        raise Refusal(
            422,
            "filters: observer_id and observed_id are required (a query is always scoped)",
            "filters.observer_id",
        )
    parse(filters, CONCLUSION_FIELDS)  # the rest in the filter language; refused here if invalid
    sessions = await sessions_of(svc.store, workspace_id, scope=body.scope)
    try:
        query = ObservationSearchQuery(
            observer=observer,
            observed=observed,
            query=body.query,
            top_k=body.top_k,
            max_distance=body.distance,
            sessions=sessions,
            filters=filters or None,
        )
    except ValidationError as err:
        raise refusal(err, rename=_QUERY_FIELDS) from err
    found = await rpc.call(
        svc.nc,
        subjects.query_subject(workspace_id, ObservationSearchQuery.KIND),
        query,
        ObservationSearchReply,
        QUERY_TIMEOUT,
    )
    hits = found.hits
    rows = await svc.store.all(
        f"SELECT * FROM observations WHERE {LIVE} AND id = ANY(%s)",
        (workspace_id, [h.id for h in hits]),
    )
    by_id = {r["id"]: r for r in rows}
    return [view(by_id[h.id]) for h in hits if h.id in by_id]


@router.get("/{conclusion_id}", response_model=ConclusionOut)
async def get_conclusion(workspace_id: PathId, conclusion_id: PathId, svc: Svc) -> ConclusionOut:
    """One live conclusion."""
    row = await svc.store.one(
        f"SELECT * FROM observations WHERE {LIVE} AND id = %s", (workspace_id, conclusion_id)
    )
    if row is None:
        raise Refusal(404, f"conclusion {conclusion_id!r} not found", "conclusion_id")
    return view(row)


@router.delete("/{conclusion_id}", status_code=204)
async def delete_conclusion(workspace_id: PathId, conclusion_id: PathId, svc: Svc) -> None:
    """Remove a conclusion from its representation; the log keeps it, with the reason."""
    row = await svc.store.one(
        f"SELECT observer, observed FROM observations WHERE {LIVE} AND id = %s",
        (workspace_id, conclusion_id),
    )
    if row is None:
        raise Refusal(404, f"conclusion {conclusion_id!r} not found", "conclusion_id")
    await svc.bus.send(
        workspace_id,
        c.DeleteConclusion(
            conclusion_id=conclusion_id, observer_id=row["observer"], observed_id=row["observed"]
        ),
        memory=True,
    )
