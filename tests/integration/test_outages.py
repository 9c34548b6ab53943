"""Consumers come back by themselves after the bus was away."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from nats.js.api import StreamConfig

from mnemo_runtime.bus import connect
from mnemo_runtime.stack import LocalNats, free_port
from mnemo_runtime.work import DurablePull, stage_consumer


async def _next(pull: DurablePull, timeout: float = 20.0) -> list[bytes]:
    """What the next fetch that gets anything gets (acknowledged), within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msgs = await pull.fetch(10, timeout=0.25)
        if msgs:
            for m in msgs:
                await m.ack()
            return [m.data for m in msgs]
    raise AssertionError(f"nothing fetched within {timeout}s")


async def test_a_durable_pull_binds_again_after_the_bus_was_away(tmp_path: Path):
    server = LocalNats(tmp_path / "nats", free_port())
    nc = await connect(server.start(), "test-outage")
    js = nc.jetstream(timeout=2)
    try:
        await js.add_stream(StreamConfig(name="OUTAGE", subjects=["outage.>"]))
        pull = DurablePull(js, stage_consumer("outage.>", "stage", ack_wait=30), "OUTAGE", 0.1)
        # The server goes away before the consumer is first bound, as when a stage starts
        # during a broker restart: the fetch finds nothing, and does not end the stage.
        server.stop()
        assert await asyncio.wait_for(pull.fetch(1, timeout=0.25), 15) == []
        server.start()
        await js.publish("outage.a", b"after the restart")
        assert await _next(pull) == [b"after the restart"]
        # The durable deleted under it: bound (made) again, reading on.
        await js.delete_consumer("OUTAGE", "stage")
        await js.publish("outage.a", b"after the delete")
        assert b"after the delete" in await _next(pull)
        await pull.close()
    finally:
        await nc.close()
        server.stop()
