"""The gRPC gateway (``mnemo.v1``): every service over the same handlers as HTTP, with
``grpc.health.v1`` per service and server reflection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from mnemo.v1 import (
    conclusions_pb2,
    conclusions_pb2_grpc,
    context_pb2,
    context_pb2_grpc,
    dialectic_pb2,
    dialectic_pb2_grpc,
    dreams_pb2,
    dreams_pb2_grpc,
    messages_pb2,
    messages_pb2_grpc,
    peers_pb2,
    peers_pb2_grpc,
    queue_pb2,
    queue_pb2_grpc,
    sessions_pb2,
    sessions_pb2_grpc,
    workspaces_pb2,
    workspaces_pb2_grpc,
)
from nats.aio.client import Client as NATS
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo_gateway.app import build_services
from mnemo_gateway.auth.settings import AuthSettings
from mnemo_gateway.commands import LocalIngest
from mnemo_gateway.deps import Services
from mnemo_gateway.grpc_api.access import KeyAuthorizer
from mnemo_gateway.grpc_api.calls import Authorizer, Calls
from mnemo_gateway.grpc_api.dialectic import dialectic_servicer
from mnemo_gateway.grpc_api.entities import peer_servicer, session_servicer, workspace_servicer
from mnemo_gateway.grpc_api.memory import (
    conclusion_servicer,
    context_servicer,
    dream_servicer,
    queue_servicer,
)
from mnemo_gateway.grpc_api.messages import message_servicer
from mnemo_gateway.settings import GatewaySettings
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool

log = get_logger("mnemo.gateway.grpc")

_MODULES = (
    workspaces_pb2,
    peers_pb2,
    sessions_pb2,
    messages_pb2,
    conclusions_pb2,
    context_pb2,
    dialectic_pb2,
    queue_pb2,
    dreams_pb2,
)
SERVICE_NAMES = tuple(
    service.full_name
    for module in _MODULES
    for service in module.DESCRIPTOR.services_by_name.values()
)


class GrpcSettings(BaseSettings):
    """Env prefix MNEMO_GRPC_: where the gRPC gateway listens."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_GRPC_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 50051


@asynccontextmanager
async def grpc_gateway(
    settings: GrpcSettings,
    gateway: GatewaySettings,
    nc: NATS,
    pool: Pool,
    local_ingest: LocalIngest | None = None,
    authorize: Authorizer | None = None,
    auth: AuthSettings | None = None,
) -> AsyncIterator[grpc.aio.Server]:
    """The gRPC gateway, listening, until the context ends.

    Calls are authorised with bearer keys as HTTP requests are (``access``), unless another
    ``authorize`` is given; ``auth``: the authentication settings (by default the environment's).
    """
    svc, lifecycle = build_services(gateway, nc, pool, local_ingest, auth)
    calls = Calls(authorize or KeyAuthorizer(svc.authority))
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", gateway.max_body_bytes),
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ]
    )
    _add_servicers(server, svc, calls)
    checks = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checks, server)
    reflection.enable_server_reflection(
        (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    port = server.add_insecure_port(f"{settings.host}:{settings.port}")
    async with lifecycle():
        await server.start()
        for name in ("", *SERVICE_NAMES):
            await checks.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("grpc.listening", host=settings.host, port=port)
        try:
            yield server
        finally:
            for name in ("", *SERVICE_NAMES):
                await checks.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
            await server.stop(grace=5)


def _add_servicers(server: grpc.aio.Server, svc: Services, calls: Calls) -> None:
    workspaces_pb2_grpc.add_WorkspaceServiceServicer_to_server(
        workspace_servicer(svc, calls), server
    )
    peers_pb2_grpc.add_PeerServiceServicer_to_server(peer_servicer(svc, calls), server)
    sessions_pb2_grpc.add_SessionServiceServicer_to_server(session_servicer(svc, calls), server)
    messages_pb2_grpc.add_MessageServiceServicer_to_server(message_servicer(svc, calls), server)
    conclusions_pb2_grpc.add_ConclusionServiceServicer_to_server(
        conclusion_servicer(svc, calls), server
    )
    context_pb2_grpc.add_ContextServiceServicer_to_server(context_servicer(svc, calls), server)
    dialectic_pb2_grpc.add_DialecticServiceServicer_to_server(
        dialectic_servicer(svc, calls), server
    )
    queue_pb2_grpc.add_QueueServiceServicer_to_server(queue_servicer(svc, calls), server)
    dreams_pb2_grpc.add_DreamServiceServicer_to_server(dream_servicer(svc, calls), server)
