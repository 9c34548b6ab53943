"""The revoked key ids, kept current from the log.

Every ``KeyRevoked`` event is read at start-up, before the gateway serves, and each new one as it
is appended (an ordered push consumer, which JetStream resumes after a reconnect). A revocation
whose key would have expired by now is forgotten: the key is refused as expired anyway.
"""

from __future__ import annotations

import contextlib
import time

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError
from pydantic import ValidationError

from mnemo_gateway.positions import Position
from mnemo_runtime.logging import get_logger
from mnemo_schema import subjects
from mnemo_schema.keys import STORED_KEY_EVENTS, KeyRevoked

log = get_logger("mnemo.gateway")


class Revocations:
    """Which key ids are revoked, as of stream position ``position``."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js
        self._revoked: dict[str, float | None] = {}  # key id -> its expiry, if known
        self.position = Position()
        self._sub: JetStreamContext.PushSubscription | None = None

    def __contains__(self, key_id: str) -> bool:
        return key_id in self._revoked

    def __len__(self) -> int:
        return len(self._revoked)

    async def start(self, timeout: float = 10.0) -> None:
        """Read every revocation in the log, then follow new ones."""
        self._sub = await self._js.subscribe(
            STORED_KEY_EVENTS,
            stream=subjects.STREAM,
            cb=self._on_event,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
        )
        try:
            last = (await self._js.get_last_msg(subjects.STREAM, STORED_KEY_EVENTS)).seq or 0
        except NotFoundError:
            last = 0
        if not await self.wait(last, timeout):
            raise RuntimeError(f"the key revocations in the log were not read within {timeout}s")

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _on_event(self, msg: Msg) -> None:
        try:
            event = KeyRevoked.model_validate_json(msg.data)
        except ValidationError:
            # The projections quarantine what does not decode; a gateway has no use for it.
            log.error("gateway.undecodable_key_event", seq=msg.metadata.sequence.stream)
        else:
            self.add(event)
        self.position.advance(int(msg.metadata.sequence.stream))

    def add(self, event: KeyRevoked) -> None:
        """Refuse ``event.key_id`` from now on."""
        expiry = event.expires_at.timestamp() if event.expires_at is not None else None
        now = time.time()
        if expiry is None or expiry > now:
            self._revoked[event.key_id] = expiry
        if len(self._revoked) % 1024 == 0:  # now and then, forget what has expired
            self._revoked = {k: e for k, e in self._revoked.items() if e is None or e > now}

    async def wait(self, seq: int, timeout: float) -> bool:
        """True once the revocations up to stream position ``seq`` are known here."""
        return await self.position.wait(seq, timeout)
