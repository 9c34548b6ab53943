"""Reading stored events back leaves no consumer behind on the server.

Each read makes a consumer of its own; one left to its inactive threshold outlives the read by
30 s, and a stack that reads several times a second (the eraser, a workspace's write model) held
about a thousand at once, the server's limit, after which every new consumer was refused."""

from __future__ import annotations

import nats

from mnemo_runtime.bus import ensure_stream
from mnemo_runtime.streams import read_stored
from mnemo_schema import subjects

READS = 50


async def test_reads_return_the_stored_range_and_leave_no_consumer(own_nats):
    nc = await nats.connect(own_nats)
    try:
        js = nc.jetstream()
        await ensure_stream(js)
        seqs = []
        for i in range(6):
            ack = await js.publish(subjects.entity_subject("ws", "peer"), f"p{i}".encode())
            seqs.append(ack.seq)
        await js.publish(subjects.entity_subject("other", "peer"), b"elsewhere")
        mine = subjects.entity_filter("ws")

        every = await read_stored(js, subjects.STREAM, mine)
        assert [s.seq for s in every] == seqs
        assert [s.data for s in every] == [f"p{i}".encode() for i in range(6)]
        assert all(s.subject.startswith("mnemo.evt.ws.") for s in every)
        between = await read_stored(js, subjects.STREAM, mine, after=seqs[1], before=seqs[4])
        assert [s.seq for s in between] == seqs[2:4]
        assert await read_stored(js, subjects.STREAM, mine, after=seqs[-1]) == []

        for _ in range(READS):
            await read_stored(js, subjects.STREAM, mine, after=seqs[2])
        info = await js.stream_info(subjects.STREAM)
        assert info.state.consumer_count == 0
    finally:
        await nc.close()
