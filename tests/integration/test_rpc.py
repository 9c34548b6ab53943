"""Query request-reply and streamed replies between services, on a real NATS server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import nats
import pytest
from pydantic import BaseModel

from mnemo_runtime import rpc
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

        class Wrong(BaseModel):
            nope: int = 1

        with pytest.raises(Refusal) as err:
            await rpc.call(nc, "mnemo.qry.w1.echo", Wrong(), Answer, 5)
        assert err.value.status == 422 and err.value.field == "text"

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
        assert err.value.status == 503
    finally:
        await nc.close()
