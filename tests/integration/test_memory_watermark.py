"""Read-your-writes on a projection that takes workspaces in turns: a workspace applied past its
partition's position is seen as applied, from the announcement or, if that is lost, from
``projection_ahead``; a neighbour in the same partition is not."""

from __future__ import annotations

from mnemo_gateway.watermark import ProjectionWatermark
from mnemo_runtime.infra import open_infra
from mnemo_schema import subjects

from .conftest import neighbour

SUBJECT = "mnemo.test.turns.applied"


async def test_a_workspace_past_its_partitions_position_is_seen(own_nats, fresh_database):
    infra = await open_infra(own_nats, fresh_database, "test-watermark")
    a = "wm-a"
    b = neighbour(a, infra.partitions)
    partition = subjects.partition_of(a, infra.partitions)
    async with infra.pool.connection() as conn:
        await conn.execute(
            "INSERT INTO projection_positions (name, partition, seq) VALUES ('turns', %s, 10)",
            (partition,),
        )
    watermark = ProjectionWatermark(infra.nc, infra.pool, "turns", SUBJECT, fair=True)
    await watermark.start()
    try:
        assert await watermark.wait(a, 10, 1.0)  # the partition's position
        await infra.nc.publish(SUBJECT, f"{partition}:10:40:{a}".encode())
        assert await watermark.wait(a, 40, 5.0)
        assert not await watermark.wait(b, 40, 0.3)  # the neighbour is not that far
        # An announcement lost: the stored position of the workspace answers.
        async with infra.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO projection_ahead (name, partition, workspace, seq)"
                " VALUES ('turns', %s, %s, 55)",
                (partition, b),
            )
        assert await watermark.wait(b, 55, 5.0)
        assert not await watermark.wait(b, 56, 0.3)
        # The partition's position passing both settles every wait below it.
        await infra.nc.publish(SUBJECT, f"{partition}:60".encode())
        assert await watermark.wait(a, 60, 5.0) and await watermark.wait(b, 58, 5.0)
    finally:
        await watermark.stop()
        await infra.close()


async def test_a_projection_in_log_order_needs_the_partitions_position(own_nats, fresh_database):
    infra = await open_infra(own_nats, fresh_database, "test-watermark-order")
    partition = subjects.partition_of("wm-a", infra.partitions)
    watermark = ProjectionWatermark(infra.nc, infra.pool, "turns", SUBJECT)
    await watermark.start()
    try:
        await infra.nc.publish(SUBJECT, f"{partition}:10:40:wm-a".encode())
        assert await watermark.wait("wm-a", 10, 5.0)
        assert not await watermark.wait("wm-a", 40, 0.3)
    finally:
        await watermark.stop()
        await infra.close()
