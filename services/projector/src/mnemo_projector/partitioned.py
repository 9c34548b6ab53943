"""One projection (or the eraser) over the partitions this process holds the leases of.

Each partition has a projector of its own (``runner.Projector``): its position, its loop, its
batches; and an eraser of its own (``eraser.Eraser``). The read model is prepared once per
process; the leases (``mnemo_runtime.partitions``) start and stop the partitions' loops as they
come and go.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from mnemo_projector.eraser import ERASURE, Eraser
from mnemo_projector.positions import Projection, ensure_position
from mnemo_projector.runner import Projector
from mnemo_runtime.pg import Pool


class _Loops:
    """The running loop of each partition, each stopped by an event of its own."""

    def __init__(self) -> None:
        self._running: dict[int, tuple[asyncio.Event, asyncio.Task[None]]] = {}

    def start(self, partition: int, run: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        stop = asyncio.Event()

        async def loop() -> None:
            await run(stop)

        self._running[partition] = (stop, asyncio.create_task(loop()))

    async def stop(self, partition: int) -> None:
        stop, task = self._running.pop(partition)
        stop.set()
        with contextlib.suppress(Exception):
            await task


class ProjectionGroup:
    """The partitioned stage of one projection (lease group ``projector-<name>``)."""

    def __init__(
        self,
        projection: Projection,
        pool: Pool,
        projector: Callable[[int], Projector],
        partitions: int,
    ) -> None:
        self.projection = projection
        self.partitions = partitions
        self.group = f"projector-{projection.name}"
        self._pool = pool
        self._projector = projector
        self._projectors: dict[int, Projector] = {}
        self._loops = _Loops()

    async def setup(self) -> None:
        """Prepare the read model and every partition's position row (once, before any
        partition starts: readers count on a row per partition)."""
        async with self._pool.connection() as conn:
            await self.projection.setup(conn)
            for partition in range(self.partitions):
                await ensure_position(conn, self.projection.name, partition)

    @property
    def projectors(self) -> dict[int, Projector]:
        """The partitions this process projects now, and their projectors."""
        return dict(self._projectors)

    async def start(self, partition: int) -> None:
        projector = self._projector(partition)
        await projector.setup(read_model=False)
        self._projectors[partition] = projector
        self._loops.start(partition, projector.run)

    async def stop(self, partition: int) -> None:
        self._projectors.pop(partition, None)
        await self._loops.stop(partition)

    async def pending(self) -> int:
        """Events the partitions projected here have yet to apply."""
        return sum([await p.pending() for p in self.projectors.values()])

    async def pending_everywhere(self, partitions: int) -> int:
        """Events every partition has yet to apply, wherever it is projected (from the stored
        positions)."""
        total = 0
        for partition in range(partitions):
            projector = self._projector(partition)
            await projector.setup(read_model=False)
            total += await projector.pending()
        return total

    async def catch_up(self, partitions: int) -> int:
        """Apply everything the log holds in every partition, here and now (no leases: for a
        rebuild while nothing else projects); how many events were pending."""
        total = 0
        for partition in range(partitions):
            projector = self._projector(partition)
            await projector.setup(read_model=False)
            total += await projector.pending()
            await projector.catch_up()
        return total


class EraserGroup:
    """The partitioned stage of the eraser (lease group ``projector-erasure``)."""

    def __init__(self, eraser: Callable[[int], Eraser], partitions: int) -> None:
        self.partitions = partitions
        self.group = f"projector-{ERASURE}"
        self._eraser = eraser
        self._loops = _Loops()

    async def setup(self) -> None:
        """Every partition's position row (before any partition starts)."""
        for partition in range(self.partitions):
            await self._eraser(partition).setup()

    async def start(self, partition: int) -> None:
        self._loops.start(partition, self._eraser(partition).run)

    async def stop(self, partition: int) -> None:
        await self._loops.stop(partition)
