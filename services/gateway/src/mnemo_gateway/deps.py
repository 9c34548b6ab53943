"""What route handlers receive: the command bus, the read store and the authority."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from nats.aio.client import Client as NATS

from mnemo_gateway.auth.authority import Authority
from mnemo_gateway.commands import CommandBus
from mnemo_gateway.store import ReadStore
from mnemo_schema.errors import Refusal
from mnemo_schema.ids import ID_MAX_LENGTH, ID_PATTERN


@dataclass(frozen=True)
class Services:
    """What every handler works with, whichever transport (HTTP, gRPC) called it."""

    bus: CommandBus
    store: ReadStore
    # Queries to the context and dialectic services, and events published directly.
    nc: NATS
    authority: Authority


async def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


Svc = Annotated[Services, Depends(_services)]


# Pages beyond this would ask Postgres for an offset past what it counts (64 bits).
MAX_PAGE = 1_000_000


@dataclass(frozen=True)
class Paging:
    page: int
    size: int
    reverse: bool


async def _paging(
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    size: Annotated[int, Query(ge=1, le=100)] = 50,
    reverse: bool = False,
) -> Paging:
    return Paging(page, size, reverse)


PageQ = Annotated[Paging, Depends(_paging)]


def order(column: str, paging: Paging) -> str:
    """ORDER BY clause for the requested direction."""
    return f"{column} {'DESC' if paging.reverse else 'ASC'}"


# Every id in a path: the alphabet and length every id has (they become NATS subject tokens).
PathId = Annotated[str, Path(pattern=ID_PATTERN, min_length=1, max_length=ID_MAX_LENGTH)]


_KNOWN: dict[int, frozenset[str]] = {}


def _query_names(dependant: Dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _known_query(route: APIRoute) -> frozenset[str]:
    known = _KNOWN.get(id(route))
    if known is None:
        known = _KNOWN[id(route)] = frozenset(_query_names(route.dependant))
    return known


async def reject_unknown_query(request: Request) -> None:
    """A query parameter the route does not take is a 422 naming it: a restriction asked for
    and silently ignored would read more than the caller meant."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _known_query(route)
    for name in request.query_params:
        if name not in known:
            raise Refusal(422, f"{name}: not a parameter of this route", name)
