"""NATS / JetStream plumbing: connecting, declaring the event stream, publishing events."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    PubAck,
    RetentionPolicy,
    StorageType,
    StreamConfig,
    SubjectTransform,
)
from nats.js.errors import NotFoundError

from mnemo_schema import subjects
from mnemo_schema.events import Envelope, encode_event
from mnemo_schema.keys import KeyRevoked

MSG_ID_HEADER = "Nats-Msg-Id"


async def connect(url: str, name: str) -> NATS:
    """Connect to NATS, retrying while the server comes up."""
    return await nats.connect(
        url,
        name=name,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        connect_timeout=5,
        allow_reconnect=True,
    )


def stream_config(partitions: int = subjects.DEFAULT_PARTITIONS) -> StreamConfig:
    """The event stream: file storage, kept forever, duplicate window for retried publishes,
    each event stored under its workspace's partition (see ``subjects``), direct reads allowed."""
    source, destination = subjects.stream_transform(partitions)
    return StreamConfig(
        name=subjects.STREAM,
        subjects=[subjects.EVENT_SUBJECTS],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD,
        max_age=0,
        duplicate_window=float(subjects.DUPLICATE_WINDOW_SECONDS),
        subject_transform=SubjectTransform(src=source, dest=destination),
        allow_direct=True,
    )


class PartitionMismatch(RuntimeError):
    """The stream's partition count is not the one this process was configured with."""


async def ensure_stream(js: JetStreamContext, partitions: int | None = None) -> int:
    """Create the event stream if it does not exist (idempotent, safe from every service);
    return its partition count.

    The count is fixed when the stream is created (``partitions``, or the default): a
    workspace's events must stay in one partition for the log's whole life. A process told
    another count than the stream's refuses to start rather than read the wrong partitions.
    """
    try:
        info = await js.stream_info(subjects.STREAM)
    except NotFoundError:
        try:
            await js.add_stream(stream_config(partitions or subjects.DEFAULT_PARTITIONS))
        except Exception:
            # Another process created it at the same moment: read back what it made.
            if not await _stream_exists(js):
                raise
        info = await js.stream_info(subjects.STREAM)
    transform = info.config.subject_transform
    found = subjects.transform_partitions(
        transform.src if transform else None, transform.dest if transform else None
    )
    if found is None:
        raise PartitionMismatch(
            f"the stream {subjects.STREAM} has no partitions: it was made by an earlier version"
            " of Mnemo, whose stored subjects this one does not read. Start from an empty"
            " stream (locally: `make clean`)."
        )
    if partitions is not None and partitions != found:
        raise PartitionMismatch(
            f"MNEMO_PARTITIONS is {partitions} but the stream {subjects.STREAM} has {found}"
            " partitions, fixed when it was created: set MNEMO_PARTITIONS to"
            f" {found} (or leave it unset)"
        )
    return found


async def _stream_exists(js: JetStreamContext) -> bool:
    try:
        await js.stream_info(subjects.STREAM)
    except NotFoundError:
        return False
    return True


async def stream_last_seq(js: JetStreamContext) -> int:
    """Sequence of the newest event in the stream (0 when empty)."""
    info = await js.stream_info(subjects.STREAM)
    return int(info.state.last_seq)


class EventPublisher:
    """Appends events to the stream; returns each event's stream sequence after the store acks.

    Publishes in a batch are pipelined on one connection, so they are stored in the order given.
    ``Nats-Msg-Id`` is the event id: a retried publish inside the duplicate window is dropped and
    answered with the original sequence.
    """

    def __init__(self, js: JetStreamContext, timeout: float = 10.0) -> None:
        self._js = js
        self._timeout = timeout

    async def send(
        self, events: Sequence[Envelope | KeyRevoked], headers: dict[str, str] | None = None
    ) -> Awaitable[list[int]]:
        """Queue ``events`` for publication in order; await the result for their sequences.

        Once this returns, the events are queued on the connection in order, so a caller holding
        a lock for ordering may release it before the store acknowledges them.
        """
        futures = []
        for event in events:
            # The trace context travels in the envelope, where every consumer reads it; as
            # headers too it would be parsed again at every delivery to every consumer.
            hdrs = {MSG_ID_HEADER: event.event_id, **(headers or {})}
            # wait_stall=None keeps the semaphore acquisition on asyncio's fast path (no task per
            # publish), so a whole batch is queued before the flusher writes it in one go.
            fut = await self._js.publish_async(event.subject(), encode_event(event), headers=hdrs)
            futures.append(fut)
        return self._acks(futures)

    async def _acks(self, futures: list[asyncio.Future[PubAck]]) -> list[int]:
        acks = await asyncio.wait_for(asyncio.gather(*futures), timeout=self._timeout)
        return [int(a.seq) for a in acks]

    async def publish(
        self, events: Sequence[Envelope | KeyRevoked], headers: dict[str, str] | None = None
    ) -> list[int]:
        """Publish ``events`` in order; return their stream sequences once stored."""
        return await (await self.send(events, headers))
