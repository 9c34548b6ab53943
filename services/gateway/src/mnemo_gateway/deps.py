"""What route handlers receive: the command bus and the read store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from nats.aio.client import Client as NATS

from mnemo_gateway.commands import CommandBus
from mnemo_gateway.store import ReadStore
from mnemo_schema.ids import ID_MAX_LENGTH, ID_PATTERN


@dataclass(frozen=True)
class Services:
    """What every handler works with, whichever transport (HTTP, gRPC) called it."""

    bus: CommandBus
    store: ReadStore
    # Queries to the context and dialectic services, and events published directly.
    nc: NATS


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
