"""The webhook component: queue.empty detection and the dispatcher, beside the HTTP server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nats.aio.client import Client as NATS

from mnemo_gateway.store import ReadStore
from mnemo_gateway.webhooks.dispatcher import STAGE, Dispatcher
from mnemo_gateway.webhooks.drain import Drained, DrainNotifier, DrainWatch, StatusProbe
from mnemo_gateway.webhooks.log import DeliveryLog
from mnemo_gateway.webhooks.settings import WebhookSettings
from mnemo_gateway.webhooks.work import ensure_webhook_stream, new_event, publish_event
from mnemo_runtime.bus import ensure_stream
from mnemo_runtime.deadletters import DeadLetters
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects
from mnemo_schema.ids import derived_event_id
from mnemo_schema.webhooks import QUEUE_EMPTY

log = get_logger("mnemo.webhooks")


def queue_empty_data(d: Drained) -> dict[str, str | None]:
    """``queue.empty``'s data, as the Honcho API sends it (the deriver's work: representation)."""
    return {
        "workspace_id": d.workspace,
        "queue_type": "representation",
        "session_id": d.session_id,
        "sender_name": None,
        "observer_name": None,
    }


async def run_webhooks(
    nc: NATS,
    pool: Pool,
    state_dir: Path,
    stop: asyncio.Event,
    settings: WebhookSettings | None = None,
) -> None:
    """Until ``stop``: announce drained queues and deliver, when a signing secret is set."""
    s = settings or WebhookSettings()
    js = nc.jetstream()
    await ensure_webhook_stream(js)

    async def notify(d: Drained) -> None:
        key = derived_event_id(QUEUE_EMPTY, d.workspace, d.session_id or "", str(d.total))
        await publish_event(js, new_event(d.workspace, QUEUE_EMPTY, queue_empty_data(d), key))

    secret = s.signing_secret(state_dir)
    if secret is None:
        # Test events still queue (and wait); drains are not noticed by this process.
        log.warning("webhook.no_secret", hint="set MNEMO_WEBHOOK_SECRET: nothing is delivered")
        return
    dead = DeadLetters(js, pool, STAGE)
    partitions = await ensure_stream(js)
    probe = StatusProbe(ReadStore(pool), lambda ws: subjects.partition_of(ws, partitions))
    try:
        await asyncio.gather(
            DrainNotifier(nc, DrainWatch(probe), notify).run(stop),
            Dispatcher(js, DeliveryLog(pool), dead, s, secret).run(stop),
        )
    except Exception:
        log.exception("webhook.stopped")  # the work stays in the stream for the next start
        raise
