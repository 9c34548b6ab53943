"""A workspace's messages read again from the log: an ordered push consumer filtered to the
workspace's message subjects of its partition, from a position on.

The subscription's callback hands each message to the deriver before the next is taken, and
the client answers the server's flow control only as messages are handed over: a re-read holds
little in memory, whatever the size of the backlog behind it. Nothing is acknowledged; what is
derived is recorded by the deriver (``GapRecords``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from mnemo_deriver.ports import Sink
from mnemo_runtime import direct
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event

log = get_logger("mnemo.deriver")


# Other events share the message subjects (a message's metadata updated): ``any_from`` steps
# past at most this many before it answers that something may be left.
_MAX_STEPS = 64


class _Read:
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.sub: Any = None
        self.stopped = False


class LogReread:
    """The deriver's re-reads, one per workspace at most."""

    def __init__(self, nc: NATS, js: JetStreamContext) -> None:
        self._nc = nc
        self._js = js
        self._reads: dict[str, _Read] = {}

    async def start(self, partition: int, workspace: str, start: int, sink: Sink) -> None:
        await self.stop(workspace)
        read = self._reads[workspace] = _Read(sink)

        async def received(msg: Msg) -> None:
            if read.stopped:
                return
            seq = int(msg.metadata.sequence.stream)
            try:
                event = decode_event(msg.data)
            except ValidationError:
                return  # parked as a dead letter when the durable delivered it
            if isinstance(event, MessagePosted) and not await read.sink([(seq, event)]):
                read.stopped = True  # unsubscribed by the next ``stop``, outside this callback

        read.sub = await self._js.subscribe(
            subjects.of_workspace(subjects.message_filter(partition), workspace),
            stream=subjects.STREAM,
            cb=received,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            config=ConsumerConfig(opt_start_seq=max(1, start), mem_storage=True),
            idle_heartbeat=5.0,
        )

    async def stop(self, workspace: str) -> None:
        read = self._reads.pop(workspace, None)
        if read is None:
            return
        read.stopped = True
        if read.sub is not None:
            with contextlib.suppress(Exception):
                await read.sub.unsubscribe()

    async def any_from(self, partition: int, workspace: str, start: int) -> bool:
        subject = subjects.of_workspace(subjects.message_filter(partition), workspace)
        seq = start
        for _ in range(_MAX_STEPS):
            found = await direct.next_from(self._nc, subject, seq)
            if found is None:
                return False
            try:
                if isinstance(decode_event(found.data), MessagePosted):
                    return True
            except ValidationError:
                pass  # a poison event is no message to derive
            seq = found.seq + 1
        return True

    async def close(self) -> None:
        for workspace in list(self._reads):
            await self.stop(workspace)
