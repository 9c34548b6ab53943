"""Reading back and erasing stored messages of a JetStream stream.

Erasing is by sequence. A secure erase (``MSG.DELETE`` without ``no_erase``) overwrites the
message's bytes in its block file with random data before it reports: the content is gone from
the store files. Purging a subject does not do that (measured: the purged payloads stay in the
block files until the block is compacted or expires), so erasure never relies on a purge. A
secure erase costs a sync of the block file (about 6 ms on the development machine's disk);
messages without content are removed without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

# JetStream's answer to deleting a sequence that holds no message (erased already).
NO_MESSAGE = 10057
_IN_FLIGHT = 32
# The name every read's consumer starts with, and how long the server keeps one whose reader
# died before deleting it.
READ_CONSUMER_PREFIX = "read-"
READ_CONSUMER_THRESHOLD_S = 30.0


@dataclass(frozen=True)
class Stored:
    """One message as the stream holds it."""

    seq: int
    subject: str
    data: bytes


async def read_stored(
    js: JetStreamContext,
    stream: str,
    filter_subject: str,
    before: int | None = None,
    after: int = 0,
) -> list[Stored]:
    """Every message of ``stream`` on ``filter_subject`` with sequence above ``after`` (and below
    ``before``), oldest first, through a consumer of the read's own that acknowledges nothing.

    The consumer is deleted once read. Unsubscribing does not delete it, and the server had kept
    each one for its inactive threshold: a stack under load (the eraser reads new events this
    way several times a second) held about a thousand at a time and reached the server's limit
    on consumers, so every consumer anyone made was refused until some expired. The threshold
    stays, for a reader killed before it could delete its consumer."""
    name = f"{READ_CONSUMER_PREFIX}{uuid.uuid4().hex}"
    await js.add_consumer(
        stream,
        ConsumerConfig(
            name=name,
            filter_subject=filter_subject,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=after + 1,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=READ_CONSUMER_THRESHOLD_S,
            mem_storage=True,
        ),
    )
    try:
        sub = await js.pull_subscribe_bind(name, stream)
        try:
            return await _read(sub, before)
        finally:
            await sub.unsubscribe()
    finally:
        with contextlib.suppress(NotFoundError):
            await js.delete_consumer(stream, name)


async def _read(sub: JetStreamContext.PullSubscription, before: int | None) -> list[Stored]:
    out: list[Stored] = []
    remaining = int((await sub.consumer_info()).num_pending or 0)
    while remaining > 0:
        msgs = await sub.fetch(min(remaining, 1000), timeout=10)
        remaining -= len(msgs)
        for m in msgs:
            seq = int(m.metadata.sequence.stream)
            if before is not None and seq >= before:
                return out
            out.append(Stored(seq, m.subject, m.data))
    return out


class EraseFailed(RuntimeError):
    """JetStream refused to erase a message (for another reason than its being gone)."""


async def erase(
    nc: NATS, stream: str, seqs: Iterable[int], *, secure: bool = True, timeout: float = 10.0
) -> int:
    """Erase the messages at ``seqs`` (overwriting their bytes when ``secure``); how many were
    there. Erasing one already gone is no error, so a repeated erasure changes nothing."""
    subject = f"$JS.API.STREAM.MSG.DELETE.{stream}"
    slots = asyncio.Semaphore(_IN_FLIGHT)

    async def one(seq: int) -> bool:
        body = json.dumps({"seq": seq, "no_erase": not secure}).encode()
        async with slots:
            reply = json.loads((await nc.request(subject, body, timeout=timeout)).data)
        error = reply.get("error")
        if error is None:
            return True
        if error.get("err_code") == NO_MESSAGE:
            return False
        raise EraseFailed(f"erasing {stream} message {seq}: {error}")

    done = await asyncio.gather(*(one(s) for s in sorted(set(seqs))))
    return sum(done)
