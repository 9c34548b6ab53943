"""Read queries between services over core NATS: request-reply, and streamed replies.

A query service answers on ``mnemo.qry.<workspace>.<kind>``. Replies are JSON: a result, or an
error ``{"error": {"status", "detail", "field"}}`` that the gateway turns into the same HTTP
error. A streamed reply is a sequence of messages to the requester's inbox, each a chunk, the
last one carrying the header ``Mnemo-Stream: end``.

A service answers its queries concurrently, up to ``IN_FLIGHT`` at once per subscription (a
NATS subscription hands its messages over one at a time: awaited there, one slow chat would
hold every other query of its kind behind it); beyond that, queries wait in the subscription's
queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from pydantic import BaseModel, ValidationError

from mnemo_runtime.deadletters import transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.precedence import precedence
from mnemo_runtime.tracing import extract_context, inject_headers, tracer
from mnemo_schema import subjects
from mnemo_schema.errors import Refusal, refusal

STREAM_HEADER = "Mnemo-Stream"
# A subject of the query's own: a message on it means the caller gave up.
CANCEL_HEADER = "Mnemo-Cancel"
END = "end"
# Queries of one subscription answered at once by one process.
IN_FLIGHT = 64
# On unsubscribing, how long the queries being answered are given to finish (within the 10 s a
# stopping process gives its components); one still running then is told 503.
GRACE_S = 5.0
R = TypeVar("R", bound=BaseModel)
Q = TypeVar("Q", bound=BaseModel)
_tracer = tracer("mnemo.rpc")
log = get_logger("mnemo.rpc")


def _raise_if_error(data: bytes) -> None:
    if data.startswith(b'{"error"'):
        err = json.loads(data)["error"]
        raise Refusal(int(err["status"]), str(err["detail"]), err.get("field"))


def _cancellation(headers: dict[str, str], cancellable: bool) -> str | None:
    """With ``cancellable``, a subject of this query's own that tells the service to stop."""
    if not cancellable:
        return None
    subject = headers[CANCEL_HEADER] = f"mnemo.cancel.{uuid.uuid4().hex}"
    return subject


async def _cancel(nc: NATS, subject: str | None) -> None:
    if subject is not None:
        with contextlib.suppress(Exception):
            await nc.publish(subject, b"")


async def call(
    nc: NATS,
    subject: str,
    query: BaseModel,
    reply: type[R],
    timeout: float,
    cancellable: bool = False,
) -> R:
    """Send ``query``; the typed reply, or Refusal (503 when no service answers).

    ``cancellable``: if the caller gives up (cancelled, or its timeout passes), the service is
    told to stop working on the query (a chat stops its model call).
    """
    headers = inject_headers()
    cancel = _cancellation(headers, cancellable)
    try:
        msg = await nc.request(
            subject, query.model_dump_json().encode(), timeout=timeout, headers=headers
        )
    except (NoRespondersError, NatsTimeout, TimeoutError) as err:
        await _cancel(nc, cancel)
        raise Refusal(503, f"query service unavailable: {type(err).__name__}") from err
    except asyncio.CancelledError:
        await _cancel(nc, cancel)
        raise
    _raise_if_error(msg.data)
    return reply.model_validate_json(msg.data)


async def stream(
    nc: NATS,
    subject: str,
    query: BaseModel,
    chunk: type[R],
    timeout: float,
    cancellable: bool = False,
) -> AsyncIterator[R]:
    """Send ``query``; yield the chunks of its streamed reply until the last one
    (``cancellable`` as for ``call``: a reader that stops early stops the service too)."""
    inbox = nc.new_inbox()
    queue: asyncio.Queue[Msg] = asyncio.Queue()
    sub = await nc.subscribe(inbox, cb=queue.put)
    headers = {**inject_headers(), STREAM_HEADER: "1"}
    cancel = _cancellation(headers, cancellable)
    finished = False
    try:
        await nc.publish(subject, query.model_dump_json().encode(), reply=inbox, headers=headers)
        while True:
            try:
                msg = await asyncio.wait_for(queue.get(), timeout)
            except TimeoutError as err:
                raise Refusal(504, "query service stopped answering") from err
            if not msg.data and msg.headers and msg.headers.get("Status") == "503":
                raise Refusal(503, "query service unavailable: no responders")
            last = (msg.headers or {}).get(STREAM_HEADER) == END
            finished = last or msg.data.startswith(b'{"error"')
            _raise_if_error(msg.data)
            yield chunk.model_validate_json(msg.data)
            if last:
                return
    finally:
        if not finished:
            await _cancel(nc, cancel)
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


Handler = Callable[[str, Q], Awaitable[BaseModel]]
StreamHandler = Callable[[str, Q], AsyncIterator[BaseModel]]


def workspace_of(subject: str) -> str:
    """The workspace token of ``mnemo.qry.<workspace>.<kind>``."""
    return subject.split(".")[2]


class Served:
    """A query subscription and the queries it is answering."""

    def __init__(self, in_flight: int) -> None:
        self.slots = asyncio.Semaphore(in_flight)
        self.answering: set[asyncio.Task[None]] = set()
        self.sub: Subscription | None = None

    def start(self, work: Awaitable[None]) -> None:
        """Answer in a task of its own; its slot is given back when it ends."""
        task = asyncio.ensure_future(work)
        self.answering.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.answering.discard(task)
        self.slots.release()
        if not task.cancelled() and task.exception() is not None:
            log.error("rpc.answer_failed", error=repr(task.exception()))

    async def unsubscribe(self, grace_s: float = GRACE_S) -> None:
        """Take no more queries; let those being answered finish (cancelled after ``grace_s``)."""
        if self.sub is not None:
            with contextlib.suppress(Exception):
                await self.sub.unsubscribe()
        if self.answering:
            _, late = await asyncio.wait(set(self.answering), timeout=grace_s)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)


async def serve(
    nc: NATS,
    subject_filter: str,
    query: type[Q],
    handler: Handler[Q],
    queue_group: str,
    stream_handler: StreamHandler[Q] | None = None,
    in_flight: int = IN_FLIGHT,
) -> Served:
    """Answer queries on ``subject_filter`` (a queue group, so replicas share the load), up to
    ``in_flight`` at once."""
    served = Served(in_flight)

    async def on_msg(msg: Msg) -> None:
        if not subjects.is_inbox(msg.reply or ""):
            log.warning("rpc.reply_refused", subject=msg.subject, reply_to=msg.reply[:200])
            return  # nowhere to answer, or not an inbox: see subjects.is_inbox
        # A free slot first: while every slot is taken, the next query waits in the queue.
        await served.slots.acquire()
        served.start(answer(msg))

    async def answer(msg: Msg) -> None:
        with _tracer.start_as_current_span(
            f"query {msg.subject.rsplit('.', 1)[-1]}", context=extract_context(msg.headers)
        ):
            streamed = stream_handler is not None and (msg.headers or {}).get(STREAM_HEADER)
            try:
                q = query.model_validate_json(msg.data)
            except ValidationError as err:
                await msg.respond(refusal(err).body())
                return
            ws = workspace_of(msg.subject)

            async def reply() -> None:
                if streamed and stream_handler is not None:
                    await _stream_out(nc, msg.reply, stream_handler(ws, q))
                else:
                    await msg.respond((await handler(ws, q)).model_dump_json().encode())

            try:
                # Someone waits on it: the background work of this process, and of the others
                # on the host that yield to reads, waits too (see ``precedence``).
                with precedence().answering():
                    await _cancellable(nc, (msg.headers or {}).get(CANCEL_HEADER), reply)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    # This service is stopping, not the caller giving up: ask elsewhere.
                    stopping = Refusal(503, "the query service is stopping; ask again")
                    with contextlib.suppress(Exception):
                        await nc.publish(msg.reply, stopping.body(), headers={STREAM_HEADER: END})
                    raise
                log.info("rpc.cancelled_by_caller", subject=msg.subject)
            except Refusal as err:
                await nc.publish(msg.reply, err.body(), headers={STREAM_HEADER: END})
            except Exception as err:
                # Answered at once rather than left to the caller's timeout.
                log.exception("rpc.handler_failed", subject=msg.subject)
                failed = (
                    Refusal(503, f"a store the query service reads is unavailable: {err!r}"[:300])
                    if transient(err)
                    else Refusal(500, "the query failed inside the service; see its log")
                )
                await nc.publish(msg.reply, failed.body(), headers={STREAM_HEADER: END})

    served.sub = await nc.subscribe(subject_filter, queue=queue_group, cb=on_msg)
    return served


async def _cancellable(
    nc: NATS, cancel_subject: str | None, work: Callable[[], Awaitable[None]]
) -> None:
    """Run ``work``; a message on ``cancel_subject`` (the caller gave up) cancels it."""
    if cancel_subject is None:
        await work()
        return
    task = asyncio.ensure_future(work())

    async def on_cancel(_: Msg) -> None:
        task.cancel()

    sub = await nc.subscribe(cancel_subject, cb=on_cancel)
    try:
        await task
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


async def _stream_out(nc: NATS, reply: str, chunks: AsyncIterator[BaseModel]) -> None:
    previous: BaseModel | None = None
    async for item in chunks:
        if previous is not None:
            await nc.publish(reply, previous.model_dump_json().encode())
        previous = item
    if previous is not None:
        await nc.publish(reply, previous.model_dump_json().encode(), headers={STREAM_HEADER: END})
