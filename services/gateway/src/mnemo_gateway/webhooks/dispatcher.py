"""Delivers webhook work at least once: POST, retry with backoff, then a dead letter.

Two durable consumers of ``MNEMO_WEBHOOKS``: one fans each event out into one delivery per
endpoint the workspace has, the other POSTs deliveries. A delivery that fails on the network,
or is answered 5xx or 429, is handed back to JetStream with a delay (``signing.backoff_s``) and
tried again, up to ``max_attempts``; then, or at once for any other answer (4xx) or an unsafe
target, it becomes a dead letter of stage ``webhooks`` (``mnemo dlq list``; ``mnemo dlq
redrive`` queues it again). A delivery whose
endpoint was deleted meanwhile is dropped. Every outcome is written to ``webhook_deliveries``.

It runs as tasks of its own beside the HTTP server, so request handling never waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from pydantic import SecretStr

from mnemo_gateway.webhooks import signing, targets
from mnemo_gateway.webhooks.log import DeliveryLog
from mnemo_gateway.webhooks.settings import WebhookSettings
from mnemo_gateway.webhooks.work import (
    Delivery,
    HookEvent,
    consumer,
    ensure_webhook_stream,
    publish_delivery,
)
from mnemo_runtime import metrics
from mnemo_runtime.bus import MSG_ID_HEADER
from mnemo_runtime.deadletters import DeadLetters, Letter, redrive_loop
from mnemo_runtime.logging import get_logger
from mnemo_runtime.work import durable_batches
from mnemo_schema.subjects import (
    DELIVERY_DURABLE,
    FANOUT_DURABLE,
    WEBHOOK_STREAM,
    hook_delivery_subject,
)

log = get_logger("mnemo.webhooks")
STAGE = "webhooks"


def retryable(code: int | None) -> bool:
    """Whether an answer (None: no answer, a network error) is worth trying again."""
    return code is None or code >= 500 or code == 429


class Dispatcher:
    def __init__(
        self,
        js: JetStreamContext,
        log_: DeliveryLog,
        dead: DeadLetters,
        settings: WebhookSettings,
        secret: SecretStr,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._js = js
        self._log = log_
        self._dead = dead
        self._s = settings
        self._secret = secret
        self._client = client or httpx.AsyncClient(follow_redirects=False)

    async def run(self, stop: asyncio.Event) -> None:
        """Fan out and deliver until ``stop``."""
        await ensure_webhook_stream(self._js)
        await self._dead.ensure()
        try:
            await asyncio.gather(
                self._loop("mnemo.hook.evt.*", FANOUT_DURABLE, 30.0, self._fan_out, stop),
                self._loop(
                    "mnemo.hook.dlv.*",
                    DELIVERY_DURABLE,
                    self._s.timeout_s + 30.0,
                    self._deliver,
                    stop,
                ),
                redrive_loop(self._dead, self._redrive, stop),
            )
        finally:
            await self._client.aclose()

    async def _loop(
        self,
        filter_subject: str,
        durable: str,
        ack_wait: float,
        handle: Callable[[Msg], Awaitable[None]],
        stop: asyncio.Event,
    ) -> None:
        # Bound again after any outage of the bus (the work stays in the stream meanwhile); an
        # idle loop waits in one long pull.
        config = consumer(filter_subject, durable, ack_wait)
        batches = durable_batches(
            self._js, config, stop, fetch=self._s.concurrency, stream=WEBHOOK_STREAM
        )
        async for msgs in batches:
            await asyncio.gather(*(self._safely(handle, m) for m in msgs))

    async def _safely(self, handle: Callable[[Msg], Awaitable[None]], msg: Msg) -> None:
        try:
            await handle(msg)
        except Exception as err:  # Postgres or NATS away: redelivered after a pause
            log.warning("webhook.handling_failed", error=repr(err))
            with contextlib.suppress(Exception):
                await msg.nak(delay=self._s.backoff_base_s)

    async def _redrive(self, letter: dict[str, Any]) -> None:
        """Queue a dead letter's delivery again, with a fresh count of attempts."""
        raw = bytes(letter["fixed_data"] or letter["data"])
        d = Delivery.decode(raw)
        await self._js.publish(
            hook_delivery_subject(d.event.workspace),
            raw,
            headers={MSG_ID_HEADER: f"redrive:{letter['id']}:{letter['updated_at']}"},
        )

    async def _fan_out(self, msg: Msg) -> None:
        event = HookEvent.decode(msg.data)
        for endpoint_id, url in await self._log.endpoints(event.workspace):
            await publish_delivery(self._js, Delivery(event, endpoint_id, url))
        await msg.ack()

    async def _deliver(self, msg: Msg) -> None:
        d = Delivery.decode(msg.data)
        attempt = int(msg.metadata.num_delivered or 1)
        if not await self._log.endpoint_exists(d.event.workspace, d.endpoint_id):
            await self._log.record(d, "cancelled", attempt - 1, "endpoint deleted")
            metrics.WEBHOOK_DELIVERIES.labels("cancelled").inc()
            await msg.ack()
            return
        try:
            await targets.check(d.url, self._s.allow_link_local)
        except targets.UnsafeTarget as err:
            await self._give_up(msg, d, attempt, f"unsafe target: {err}", None, None)
            return
        raw = signing.body(d.event.type, d.event.data, d.event.at)
        headers = {
            "Content-Type": "application/json",
            signing.SIGNATURE_HEADER: signing.signature(raw, self._secret),
        }
        started = time.perf_counter()
        code: int | None = None
        try:
            answer = await self._client.post(
                d.url, content=raw, headers=headers, timeout=self._s.timeout_s
            )
            code = answer.status_code
            error = None if 200 <= code < 300 else f"answered HTTP {code}"
        except httpx.HTTPError as err:
            error = f"{type(err).__name__}: {err}"
        latency_ms = (time.perf_counter() - started) * 1000
        metrics.WEBHOOK_DELIVERY_SECONDS.observe(latency_ms / 1000)
        if error is None:
            await self._log.record(d, "delivered", attempt, None, code, latency_ms)
            metrics.WEBHOOK_DELIVERIES.labels("delivered").inc()
            await msg.ack()
            return
        if retryable(code) and attempt < self._s.max_attempts:
            delay = signing.backoff_s(attempt, self._s.backoff_base_s, self._s.backoff_cap_s)
            await self._log.record(d, "retrying", attempt, error, code, latency_ms)
            metrics.WEBHOOK_DELIVERIES.labels("retrying").inc()
            log.info("webhook.retrying", endpoint=d.endpoint_id, attempt=attempt, delay_s=delay)
            await msg.nak(delay=delay)
            return
        await self._give_up(msg, d, attempt, error, code, latency_ms)

    async def _give_up(
        self,
        msg: Msg,
        d: Delivery,
        attempt: int,
        reason: str,
        code: int | None,
        latency_ms: float | None,
    ) -> None:
        await self._log.record(d, "failed", attempt, reason, code, latency_ms)
        await self._dead.park(
            Letter(
                key=f"{d.event.event_id}:{d.endpoint_id}",
                reason=reason,
                subject=msg.subject,
                event_id=d.event.event_id,
                event_type=d.event.type,
                workspace=d.event.workspace,
                attempts=attempt,
                data=msg.data,
                detail={"endpoint_id": d.endpoint_id, "status_code": code},
            )
        )
        metrics.WEBHOOK_DELIVERIES.labels("failed").inc()
        await msg.ack()
