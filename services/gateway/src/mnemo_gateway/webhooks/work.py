"""Delivery work on ``MNEMO_WEBHOOKS``: events to announce, then one delivery per endpoint.

``mnemo.hook.evt.<workspace>`` holds each event once; the dispatcher fans it out into
``mnemo.hook.dlv.<workspace>``, one message per endpoint registered when it does. Both carry a
``Nats-Msg-Id``, so an event or delivery published twice (a retry, another replica noticing the
same drained queue) is stored once.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from mnemo_runtime.bus import MSG_ID_HEADER
from mnemo_schema.envelope import utcnow
from mnemo_schema.ids import new_event_id
from mnemo_schema.subjects import (
    DUPLICATE_WINDOW_SECONDS,
    WEBHOOK_STREAM,
    WEBHOOK_SUBJECTS,
    hook_delivery_subject,
    hook_event_subject,
)

# Work no dispatcher took in a week (none ran with a secret) is dropped from the stream.
MAX_AGE_S = 7 * 24 * 3600.0


@dataclass(frozen=True)
class HookEvent:
    """An event to announce to one workspace's endpoints."""

    workspace: str
    type: str
    data: dict[str, Any]
    timestamp: str
    event_id: str = field(default_factory=new_event_id)

    @property
    def at(self) -> datetime:
        return datetime.fromisoformat(self.timestamp)

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, raw: bytes) -> HookEvent:
        return cls(**json.loads(raw))


@dataclass(frozen=True)
class Delivery:
    """One event for one endpoint."""

    event: HookEvent
    endpoint_id: str
    url: str

    def encode(self) -> bytes:
        return json.dumps(
            {"event": asdict(self.event), "endpoint_id": self.endpoint_id, "url": self.url}
        ).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Delivery:
        got = json.loads(raw)
        return cls(HookEvent(**got["event"]), got["endpoint_id"], got["url"])


def new_event(
    workspace: str, type_: str, data: dict[str, Any], event_id: str | None = None
) -> HookEvent:
    """An event stamped now (``event_id``: a stable one, for de-duplication)."""
    stamp = utcnow().isoformat()
    if event_id is None:
        return HookEvent(workspace, type_, data, stamp)
    return HookEvent(workspace, type_, data, stamp, event_id)


async def ensure_webhook_stream(js: JetStreamContext) -> None:
    """Create ``MNEMO_WEBHOOKS`` if missing: work-queue retention, on disk."""
    try:
        await js.stream_info(WEBHOOK_STREAM)
    except NotFoundError:
        with contextlib.suppress(Exception):  # another process may create it at the same time
            await js.add_stream(
                StreamConfig(
                    name=WEBHOOK_STREAM,
                    subjects=[WEBHOOK_SUBJECTS],
                    retention=RetentionPolicy.WORK_QUEUE,
                    storage=StorageType.FILE,
                    duplicate_window=DUPLICATE_WINDOW_SECONDS,
                    max_age=MAX_AGE_S,
                )
            )


def consumer(filter_subject: str, durable: str, ack_wait: float) -> ConsumerConfig:
    """A durable consumer of the dispatcher (redelivered without limit: it gives up itself)."""
    return ConsumerConfig(
        durable_name=durable,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=1_000,
    )


async def publish_event(js: JetStreamContext, event: HookEvent) -> None:
    """Queue ``event`` for its workspace's endpoints."""
    await ensure_webhook_stream(js)
    await js.publish(
        hook_event_subject(event.workspace),
        event.encode(),
        headers={MSG_ID_HEADER: f"evt:{event.event_id}"},
    )


async def publish_delivery(js: JetStreamContext, delivery: Delivery) -> None:
    await js.publish(
        hook_delivery_subject(delivery.event.workspace),
        delivery.encode(),
        headers={MSG_ID_HEADER: f"dlv:{delivery.event.event_id}:{delivery.endpoint_id}"},
    )
