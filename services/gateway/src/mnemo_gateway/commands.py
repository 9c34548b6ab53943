"""Sends commands to ingest over NATS request-reply and waits for their projection.

When ingest runs in the same process, commands go straight to it: the same request and reply,
without the two trips through NATS.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from mnemo_gateway.watermark import ProjectionWatermark
from mnemo_runtime.logging import get_logger
from mnemo_runtime.tracing import inject_headers
from mnemo_schema import subjects
from mnemo_schema.commands import Command, CommandReply
from mnemo_schema.errors import Refusal
from mnemo_schema.keys import KEY_COMMANDS, RevokeKey

log = get_logger("mnemo.gateway")

# Ingest's handling of one command in this process: (workspace, command) -> reply.
LocalIngest = Callable[[str, Command], Awaitable[CommandReply]]


class CommandBus:
    def __init__(
        self,
        nc: NATS,
        watermark: ProjectionWatermark,
        memory_watermark: ProjectionWatermark,
        timeout: float = 10.0,
        read_your_writes_timeout: float = 10.0,
        local: LocalIngest | None = None,
    ) -> None:
        self._nc = nc
        self._local = local
        self._watermark = self.watermark = watermark
        self._memory_watermark = memory_watermark
        self._timeout = timeout
        self._ryw_timeout = read_your_writes_timeout

    async def send(self, workspace: str, cmd: Command, memory: bool = False) -> CommandReply:
        """Send ``cmd``; raise Refusal on refusal; return once the projections reflect it.

        ``memory`` also waits for the memory projection (observations written or deleted).
        """
        reply = await (
            self._ask_local(workspace, cmd) if self._local else self._ask(workspace, cmd)
        )
        refused = reply.refusal()
        if refused is not None:
            raise refused
        watermark = self._memory_watermark if memory else self._watermark
        if not await watermark.wait(workspace, reply.watermark, self._ryw_timeout):
            # The write is stored in the log; only its projection is late.
            log.warning("gateway.projection_late", watermark=reply.watermark)
        return reply

    async def revoke_key(self, cmd: RevokeKey) -> CommandReply:
        """Send ``cmd`` to ingest (always over NATS); raise Refusal on refusal."""
        reply = await self._request(KEY_COMMANDS, cmd.model_dump_json(exclude_none=True).encode())
        refused = reply.refusal()
        if refused is not None:
            raise refused
        return reply

    def partition(self, workspace: str) -> int:
        """The partition of the log ``workspace``'s events are in."""
        return self._watermark.partition(workspace)

    async def seen(self, workspace: str, seq: int, memory: bool = False) -> bool:
        """Wait (up to the read-your-writes limit) until position ``seq`` of ``workspace`` is
        applied by the entity projection (``memory``: by the memory projection)."""
        watermark = self._memory_watermark if memory else self._watermark
        return await watermark.wait(workspace, seq, self._ryw_timeout)

    async def _ask(self, workspace: str, cmd: Command) -> CommandReply:
        body = cmd.model_dump_json(exclude_none=True).encode()
        return await self._request(subjects.command_subject(workspace), body)

    async def _request(self, subject: str, body: bytes) -> CommandReply:
        try:
            msg = await self._nc.request(
                subject, body, timeout=self._timeout, headers=inject_headers()
            )
        except (NoRespondersError, NatsTimeout, TimeoutError) as err:
            raise Refusal(503, f"ingest unavailable: {type(err).__name__}") from err
        return CommandReply.model_validate_json(msg.data)

    async def _ask_local(self, workspace: str, cmd: Command) -> CommandReply:
        assert self._local is not None
        try:
            # Not cancelled on a timeout: ingest's own calls are bounded, and a command it has
            # begun to append must not be cut short.
            return await self._local(workspace, cmd)
        except Exception as err:
            log.exception("gateway.ingest_failed", workspace=workspace)
            raise Refusal(503, f"ingest unavailable: {type(err).__name__}") from err
