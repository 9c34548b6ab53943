"""Query request-reply and streamed replies between services, on a real NATS server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import nats
import psycopg
import pytest
from pydantic import BaseModel

from mnemo_runtime import rpc
from mnemo_runtime.deadletters import transient
from mnemo_runtime.precedence import Precedence, precedence
from mnemo_runtime.reads_signal import ReadsSignal
from mnemo_schema.errors import Refusal


class Ask(BaseModel):
    text: str
    n: int = 1


class Answer(BaseModel):
    workspace: str
    text: str


async def answer(ws: str, q: Ask) -> Answer:
    if q.text == "refuse":
        raise Refusal(404, "nothing about that", "text")
    if q.text == "database away":
        raise psycopg.OperationalError("terminating connection due to administrator command")
    if q.text == "bug":
        raise KeyError("a bug of the service")
    return Answer(workspace=ws, text=q.text.upper())


async def chunks(ws: str, q: Ask) -> AsyncIterator[Answer]:
    if q.text == "refuse":
        raise Refusal(409, "conflict", None)
    for i in range(q.n):
        yield Answer(workspace=ws, text=f"{q.text}-{i}")


async def test_call_and_stream(own_nats):
    nc = await nats.connect(own_nats)
    try:
        await rpc.serve(nc, "mnemo.qry.*.echo", Ask, answer, "echo", stream_handler=chunks)
        got = await rpc.call(nc, "mnemo.qry.w1.echo", Ask(text="hi"), Answer, 5)
        assert got == Answer(workspace="w1", text="HI")
        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w1.echo", Ask(text="refuse"), Answer, 5)
        assert (err.value.status, err.value.field) == (404, "text")

        # The service's store away: worth trying again (503); its own failure is not (500).
        # A background stage asking retries the first without limit (``transient``), and
        # counts the second against the work's attempts.
        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w1.echo", Ask(text="database away"), Answer, 5)
        assert err.value.status == 503 and "OperationalError" in err.value.detail
        assert transient(err.value)
        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w1.echo", Ask(text="bug"), Answer, 5)
        assert err.value.status == 500
        assert not transient(err.value)

        class Wrong(BaseModel):
            nope: int = 1

        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w1.echo", Wrong(), Answer, 5)
        assert err.value.status == 422 and err.value.field == "text"
        assert not transient(err.value)

        streamed = [
            a.text async for a in rpc.stream(nc, "mnemo.qry.w2.echo", Ask(text="x", n=3), Answer, 5)
        ]
        assert streamed == ["x-0", "x-1", "x-2"]
        with pytest.raises(Refusal) as err:
            async for _ in rpc.stream(nc, "mnemo.qry.w2.echo", Ask(text="refuse"), Answer, 5):
                pass
        assert err.value.status == 409

        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w1.nobody", Ask(text="hi"), Answer, 2)
        assert err.value.status == 503 and transient(err.value)
    finally:
        await nc.close()


async def test_a_caller_that_gives_up_stops_the_work_it_asked_for(own_nats):
    import asyncio

    started, stopped = asyncio.Event(), asyncio.Event()

    async def slow(ws: str, q: Ask) -> Answer:
        started.set()
        try:
            await asyncio.sleep(60)  # a long model call
        except asyncio.CancelledError:
            stopped.set()
            raise
        return Answer(workspace=ws, text=q.text)

    async def slow_chunks(ws: str, q: Ask) -> AsyncIterator[Answer]:
        # Each chunk goes out once the next is ready (the last is marked as such).
        yield Answer(workspace=ws, text="first")
        yield Answer(workspace=ws, text="second")
        await slow(ws, q)
        yield Answer(workspace=ws, text="never")

    nc = await nats.connect(own_nats)
    try:
        await rpc.serve(nc, "mnemo.qry.*.slow", Ask, slow, "slow", stream_handler=slow_chunks)
        # A call whose timeout passes tells the service; so does a cancelled one.
        with pytest.raises(Refusal):
            await rpc.call(nc, "mnemo.qry.w.slow", Ask(text="x"), Answer, 0.5, cancellable=True)
        await asyncio.wait_for(stopped.wait(), 5)
        started.clear(), stopped.clear()
        task = asyncio.ensure_future(
            rpc.call(nc, "mnemo.qry.w.slow", Ask(text="x"), Answer, 30, cancellable=True)
        )
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        await asyncio.wait_for(stopped.wait(), 5)
        # A stream read only in part stops too.
        started.clear(), stopped.clear()
        chunks_ = rpc.stream(nc, "mnemo.qry.w.slow", Ask(text="x"), Answer, 30, cancellable=True)
        assert (await anext(chunks_)).text == "first"
        await asyncio.wait_for(started.wait(), 5)
        await chunks_.aclose()
        await asyncio.wait_for(stopped.wait(), 5)
        # Without asking for it, a call leaves the work to finish (nothing is sent).
        started.clear(), stopped.clear()
        with pytest.raises(Refusal):
            await rpc.call(nc, "mnemo.qry.w.slow", Ask(text="x"), Answer, 0.3)
        await asyncio.sleep(0.5)
        assert not stopped.is_set()
    finally:
        await nc.close()


async def test_a_query_being_answered_holds_back_the_background_steps_of_the_host(
    own_nats, tmp_path
):
    """The answering process marks its queries on the host's reads signal; a process that
    yields to reads (here, a second Precedence on the same file) sees them while they run."""
    path = tmp_path / "reads.signal"
    precedence().share_reads(ReadsSignal(path, writer=True))
    other = Precedence(reads_max_wait_s=30.0, quiet_s=0.0)
    other.share_reads(ReadsSignal(path))
    seen: list[bool] = []

    async def slow(ws: str, q: Ask) -> Answer:
        seen.append(other.reading)
        step = asyncio.ensure_future(other.background_step("test-rpc", "backlog"))
        await asyncio.sleep(0.05)
        seen.append(step.done())
        step.cancel()
        return Answer(workspace=ws, text=q.text)

    nc = await nats.connect(own_nats)
    try:
        await rpc.serve(nc, "mnemo.qry.*.slow", Ask, slow, "slow")
        assert not other.reading
        await rpc.call(nc, "mnemo.qry.w1.slow", Ask(text="x"), Answer, 5)
        assert seen == [True, False]  # marked while answered; the step waited
        assert not other.reading
    finally:
        precedence().share_reads(None)
        await nc.close()


async def test_queries_are_answered_concurrently_up_to_the_bound(own_nats):
    """A slow query does not hold the others of its kind behind it; past ``in_flight``
    answered at once, queries wait their turn and are all answered."""
    running = 0
    most = 0
    everyone = asyncio.Event()

    async def meet(ws: str, q: Ask) -> Answer:
        nonlocal running, most
        running += 1
        most = max(most, running)
        if running >= q.n:
            everyone.set()
        try:
            # Returns only once q.n queries run at once (or, bounded, after a while).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(everyone.wait(), 0.5 if q.text == "bounded" else 10)
            return Answer(workspace=ws, text=q.text)
        finally:
            running -= 1

    nc = await nats.connect(own_nats)
    try:
        await rpc.serve(nc, "mnemo.qry.*.meet", Ask, meet, "meet")
        together = [
            rpc.call(nc, "mnemo.qry.w.meet", Ask(text=f"q{i}", n=3), Answer, 5) for i in range(3)
        ]
        got = await asyncio.wait_for(asyncio.gather(*together), 5)
        assert sorted(a.text for a in got) == ["q0", "q1", "q2"]
        assert most == 3

        most = 0
        everyone.clear()
        await rpc.serve(nc, "mnemo.qry.*.few", Ask, meet, "few", in_flight=2)
        bounded = [
            rpc.call(nc, "mnemo.qry.w.few", Ask(text="bounded", n=5), Answer, 10) for _ in range(5)
        ]
        got = await asyncio.gather(*bounded)
        assert len(got) == 5 and not everyone.is_set()
        assert most == 2
    finally:
        await nc.close()


async def test_unsubscribing_lets_the_queries_being_answered_finish(own_nats):
    """A stopping service answers what it has begun within its grace; a query still running
    after it is told 503 at once, not left to the caller's timeout."""
    release = asyncio.Event()

    async def held(ws: str, q: Ask) -> Answer:
        if q.text == "quick":
            await release.wait()
        else:
            await asyncio.sleep(60)
        return Answer(workspace=ws, text=q.text)

    nc = await nats.connect(own_nats)
    try:
        served = await rpc.serve(nc, "mnemo.qry.*.held", Ask, held, "held")
        quick = asyncio.ensure_future(
            rpc.call(nc, "mnemo.qry.w.held", Ask(text="quick"), Answer, 10)
        )
        slow = asyncio.ensure_future(rpc.call(nc, "mnemo.qry.w.held", Ask(text="slow"), Answer, 30))
        await _until(lambda: len(served.answering) == 2)
        stopping = asyncio.ensure_future(served.unsubscribe(grace_s=1.0))
        await asyncio.sleep(0.1)
        release.set()
        assert (await asyncio.wait_for(quick, 5)).text == "quick"
        with pytest.raises(Refusal) as err:
            await asyncio.wait_for(slow, 5)
        assert err.value.status == 503 and "stopping" in err.value.detail
        await asyncio.wait_for(stopping, 5)
        assert not served.answering
        # No longer subscribed: nobody answers.
        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w.held", Ask(text="quick"), Answer, 1)
        assert err.value.status == 503
    finally:
        await nc.close()


async def _until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.01)
