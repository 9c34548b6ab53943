"""Sends commands to ingest over NATS request-reply and waits for their projection."""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from mnemo_gateway.errors import ApiError
from mnemo_gateway.watermark import ProjectionWatermark
from mnemo_runtime.logging import get_logger
from mnemo_runtime.tracing import inject_headers
from mnemo_schema import subjects
from mnemo_schema.commands import Command, CommandReply

log = get_logger("mnemo.gateway")


class CommandBus:
    def __init__(
        self,
        nc: NATS,
        watermark: ProjectionWatermark,
        memory_watermark: ProjectionWatermark,
        timeout: float = 10.0,
        read_your_writes_timeout: float = 10.0,
    ) -> None:
        self._nc = nc
        self._watermark = watermark
        self._memory_watermark = memory_watermark
        self._timeout = timeout
        self._ryw_timeout = read_your_writes_timeout

    async def send(self, workspace: str, cmd: Command, memory: bool = False) -> CommandReply:
        """Send ``cmd``; raise ApiError on refusal; return once the projections reflect it.

        ``memory`` also waits for the memory projection (observations written or deleted).
        """
        body = cmd.model_dump_json(exclude_none=True).encode()
        try:
            msg = await self._nc.request(
                subjects.command_subject(workspace), body, timeout=self._timeout,
                headers=inject_headers(),
            )  # fmt: skip
        except (NoRespondersError, NatsTimeout, TimeoutError) as err:
            raise ApiError(503, f"ingest unavailable: {type(err).__name__}") from err
        reply = CommandReply.model_validate_json(msg.data)
        if not reply.ok:
            assert reply.error is not None
            raise ApiError(reply.error.status, reply.error.detail, reply.error.field)
        watermark = self._memory_watermark if memory else self._watermark
        if not await watermark.wait(reply.watermark, self._ryw_timeout):
            # The write is stored in the log; only its projection is late.
            log.warning("gateway.projection_late", watermark=reply.watermark)
        return reply
