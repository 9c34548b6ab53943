"""Foreground work first: background steps wait for it, a bounded time at most."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from prometheus_client import REGISTRY

from mnemo_runtime.precedence import Precedence, precedence
from mnemo_runtime.reads_signal import ReadsSignal


async def _spin(times: int = 5) -> None:
    """Let every task that can run, run (they wait on events, not on time)."""
    for _ in range(times):
        await asyncio.sleep(0)


async def test_a_background_step_waits_until_the_foreground_work_is_done():
    order = Precedence(max_wait_s=30.0)
    with order.foreground("chat"):
        assert order.busy
        step = asyncio.create_task(order.background_step("test-wait", "backlog"))
        await _spin()
        assert not step.done()
    waited = await asyncio.wait_for(step, timeout=5.0)
    assert waited > 0.0 and not order.busy


async def test_nested_foreground_work_holds_the_background_until_the_last_is_done():
    order = Precedence(max_wait_s=30.0)
    outer = order.foreground("chat")
    outer.__enter__()
    with order.foreground("chat"):
        step = asyncio.create_task(order.background_step("test-nested", "backlog"))
    await _spin()
    assert not step.done()  # the outer foreground work still runs
    outer.__exit__(None, None, None)
    await asyncio.wait_for(step, timeout=5.0)


async def test_a_background_step_waits_at_most_max_wait_s_and_the_wait_is_counted():
    order = Precedence(max_wait_s=0.05)
    before = REGISTRY.get_sample_value(
        "mnemo_background_wait_seconds_total", {"stage": "test-capped"}
    )
    with order.foreground("chat"):
        waited = await asyncio.wait_for(
            order.background_step("test-capped", "backlog"), timeout=5.0
        )
    assert 0.05 <= waited < 5.0
    after = REGISTRY.get_sample_value(
        "mnemo_background_wait_seconds_total", {"stage": "test-capped"}
    )
    assert after is not None and after - (before or 0.0) == pytest.approx(waited)


async def test_without_foreground_work_a_background_step_goes_at_once():
    order = Precedence()
    assert await order.background_step("test-free", "backlog") == 0.0


async def test_a_workspaces_own_foreground_work_does_not_hold_back_its_background_steps():
    order = Precedence(max_wait_s=30.0)
    with order.foreground("chat"):
        assert await order.background_step("test-own", "chat") == 0.0
        with order.foreground("other"):
            step = asyncio.create_task(order.background_step("test-own", "chat"))
            await _spin()
            assert not step.done()  # another workspace's foreground work runs
        # Only its own is left: the step goes on.
        await asyncio.wait_for(step, timeout=5.0)


async def test_the_stages_of_one_loop_share_its_precedence():
    assert precedence() is precedence()
    with pytest.raises(ValueError, match="max_wait_s"):
        Precedence(max_wait_s=0)


async def test_a_background_step_waits_while_a_read_is_answered_and_a_moment_after():
    order = Precedence(max_wait_s=30.0, reads_max_wait_s=30.0, quiet_s=0.05)
    with order.answering():
        assert order.reading
        step = asyncio.create_task(order.background_step("test-read", "backlog"))
        await asyncio.sleep(0.05)
        assert not step.done()
    assert order.reading  # within the quiet time after the read
    waited = await asyncio.wait_for(step, timeout=5.0)
    assert waited >= 0.05 + 0.05 - 0.01 and not order.reading


async def test_under_reads_that_never_stop_one_step_goes_ahead_each_max_wait():
    order = Precedence(max_wait_s=30.0, reads_max_wait_s=0.1)
    ended: list[float] = []

    async def step(i: int) -> None:
        await order.background_step("test-ahead", f"backlog-{i}")
        ended.append(time.monotonic())

    with order.answering():
        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(step(i) for i in range(3))), timeout=10.0)
    # Every step went ahead in the end, each alone: a max wait apart, never together.
    assert ended[0] - began >= 0.1
    assert all(b - a >= 0.1 - 0.005 for a, b in itertools.pairwise(ended))


async def test_the_reads_of_another_process_hold_back_a_reader_of_the_host_signal(tmp_path):
    answering, yielding = Precedence(), Precedence(reads_max_wait_s=30.0, quiet_s=0.0)
    path = tmp_path / "reads.signal"
    answering.share_reads(ReadsSignal(path, writer=True))
    yielding.share_reads(ReadsSignal(path), max_wait_s=30.0)
    with answering.answering():
        assert yielding.reading
        step = asyncio.create_task(yielding.background_step("test-host", "backlog"))
        await asyncio.sleep(0.05)
        assert not step.done()
    await asyncio.wait_for(step, timeout=5.0)
    with pytest.raises(ValueError, match="max_wait_s"):
        yielding.share_reads(ReadsSignal(path), max_wait_s=0)


async def test_a_background_step_stops_waiting_once_until_says_so():
    order = Precedence(max_wait_s=30.0, reads_max_wait_s=30.0)
    behind = [False]
    with order.foreground("chat"), order.answering():
        step = asyncio.create_task(
            order.background_step("test-until", "summary", until=lambda: behind[0])
        )
        await _spin()
        assert not step.done()  # foreground work of another workspace, and a read
        behind[0] = True
        waited = await asyncio.wait_for(step, timeout=1.0)
    assert 0.0 < waited < 1.0
    with order.answering():  # already true: no wait at all
        assert await order.background_step("test-until", "summary", until=lambda: True) == 0.0
