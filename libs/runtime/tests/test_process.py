"""A process's components: one that dies stops the process, for its supervisor to see."""

from __future__ import annotations

import asyncio

from mnemo_runtime.process import until_stopped


async def test_a_component_that_fails_stops_the_process() -> None:
    stop = asyncio.Event()

    async def works() -> None:
        await stop.wait()

    async def dies() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("the bus went away while binding")

    async def has_nothing_to_do() -> None:
        return None

    tasks = [
        asyncio.create_task(works(), name="works"),
        asyncio.create_task(has_nothing_to_do(), name="idle"),
        asyncio.create_task(dies(), name="dies"),
    ]
    failed = await asyncio.wait_for(until_stopped(stop, tasks), 5)
    assert failed is tasks[2] and failed.get_name() == "dies"
    assert stop.is_set()  # the other components are told to stop
    await asyncio.wait_for(tasks[0], 5)


async def test_the_process_runs_until_stopped_when_no_component_fails() -> None:
    stop = asyncio.Event()

    async def works() -> None:
        await stop.wait()

    async def has_nothing_to_do() -> None:
        return None

    tasks = [asyncio.create_task(works()), asyncio.create_task(has_nothing_to_do())]
    waiting = asyncio.create_task(until_stopped(stop, tasks))
    await asyncio.wait_for(tasks[1], 5)
    for _ in range(5):  # turns of the loop for the waiter to see it end
        await asyncio.sleep(0)
    assert not waiting.done()  # a component that returned without failing is let be
    stop.set()
    assert await asyncio.wait_for(waiting, 5) is None
    await asyncio.wait_for(tasks[0], 5)
