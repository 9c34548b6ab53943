"""The turn before a message, read from the log (JetStream's direct get)."""

from __future__ import annotations

from nats.aio.client import Client as NATS
from pydantic import ValidationError

from mnemo_runtime import direct
from mnemo_schema import subjects
from mnemo_schema.events import MessagePosted, decode_event

# Other events share a session's subject (metadata updates): step back past at most this many.
_MAX_STEPS = 64


class LogTurns:
    def __init__(self, nc: NATS) -> None:
        self._nc = nc

    async def before(self, workspace: str, session_id: str, seq: int) -> MessagePosted | None:
        subject = subjects.session_messages_filter(workspace, session_id)
        up_to = seq - 1
        for _ in range(_MAX_STEPS):
            found = await direct.last_up_to(self._nc, subject, up_to)
            if found is None:
                return None
            try:
                event = decode_event(found.data)
            except ValidationError:
                event = None  # a poison event is no turn of the conversation
            if isinstance(event, MessagePosted):
                return event
            up_to = found.seq - 1
        return None
