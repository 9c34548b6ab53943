"""The event log on JetStream."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Sequence

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from pydantic import ValidationError

from mnemo_runtime.bus import EventPublisher
from mnemo_runtime.deadletters import undecodable
from mnemo_runtime.logging import get_logger
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects
from mnemo_schema.events import Envelope, Event, decode_event
from mnemo_schema.keys import KeyRevoked

log = get_logger("mnemo.ingest")


class JetStreamLog:
    """Appends through the publisher; reads entity history with a filtered consumer of its own."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js
        self._publisher = EventPublisher(js)

    async def append(self, events: Sequence[Envelope | KeyRevoked]) -> Awaitable[list[int]]:
        return await self._publisher.send(events)

    async def last_seq(self, workspace: str) -> int:
        newest = 0
        for subject in (subjects.entity_filter(workspace), subjects.message_filter_of(workspace)):
            with contextlib.suppress(NotFoundError):
                newest = max(
                    newest, int((await self._js.get_last_msg(subjects.STREAM, subject)).seq or 0)
                )
        return newest

    async def entity_history(self, workspace: str) -> list[tuple[int, Event]]:
        out: list[tuple[int, Event]] = []
        for m in await read_stored(self._js, subjects.STREAM, subjects.entity_filter(workspace)):
            try:
                out.append((m.seq, decode_event(m.data)))
            except ValidationError as err:
                # A poison event (the projector quarantines it) must not stop the workspace
                # from taking commands: the write model goes without it.
                log.error("ingest.undecodable_entity_event", seq=m.seq, error=undecodable(err))
        return out
