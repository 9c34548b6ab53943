"""What route handlers receive: the command bus and the read store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request

from mnemo_gateway.commands import CommandBus
from mnemo_gateway.store import ReadStore


@dataclass(frozen=True)
class Services:
    bus: CommandBus
    store: ReadStore


async def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


Svc = Annotated[Services, Depends(_services)]


@dataclass(frozen=True)
class Paging:
    page: int
    size: int
    reverse: bool


async def _paging(
    page: Annotated[int, Query(ge=1)] = 1,
    size: Annotated[int, Query(ge=1, le=100)] = 50,
    reverse: bool = False,
) -> Paging:
    return Paging(page, size, reverse)


PageQ = Annotated[Paging, Depends(_paging)]


def order(column: str, paging: Paging) -> str:
    """ORDER BY clause for the requested direction."""
    return f"{column} {'DESC' if paging.reverse else 'ASC'}"
