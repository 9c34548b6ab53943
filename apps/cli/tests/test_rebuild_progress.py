"""What ``mnemo rebuild`` says of a replay while it runs."""

from __future__ import annotations

import asyncio
import io
import time

import pytest

from mnemo_cli.__main__ import _parser
from mnemo_cli.rebuild import duration, progress_line, report_progress


@pytest.mark.parametrize(
    ("total", "left", "elapsed", "expected"),
    [
        (
            50_000,
            40_000,
            10.0,
            "10,000 of 50,000 events applied (20%), 1,000 events/s, about 40 s left",
        ),
        (
            200_000,
            20_000,
            60.0,
            "180,000 of 200,000 events applied (90%), 3,000 events/s, about 7 s left",
        ),
        (
            9_000,
            8_999,
            0.5,
            "1 of 9,000 events applied (0%), 2 events/s, about 1 h 15 min left",
        ),
        (1_000, 1_000, 5.0, "0 of 1,000 events applied (0%), none yet"),
        (1_000, 0, 5.0, "1,000 of 1,000 events applied (100%)"),
        (0, 0, 1.0, "0 of 0 events applied (100%)"),
        # Writes arriving meanwhile: counted among those left, never as a negative count.
        (1_000, 1_500, 5.0, "0 of 1,500 events applied (0%), none yet"),
        (
            1_000,
            600,
            4.0,
            "400 of 1,000 events applied (40%), 100 events/s, about 6 s left",
        ),
    ],
)
def test_progress_line(total: int, left: int, elapsed: float, expected: str) -> None:
    assert progress_line(total, left, elapsed) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0.2, "0 s"),
        (44.6, "45 s"),
        (60, "1 min"),
        (200, "3 min 20 s"),
        (3600, "1 h"),
        (7500, "2 h 5 min"),
        (-3, "0 s"),
    ],
)
def test_duration(seconds: float, expected: str) -> None:
    assert duration(seconds) == expected


def test_progress_interval_option() -> None:
    parser = _parser()
    assert parser.parse_args(["rebuild"]).progress_every == 5.0
    assert (
        parser.parse_args(["rebuild", "--memory", "--progress-every", "0.5"]).progress_every == 0.5
    )


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_progress_interval_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parser().parse_args(["rebuild", "--progress-every", value])
    assert exit_.value.code == 2
    assert "--progress-every" in capsys.readouterr().err


async def test_the_reports_follow_the_count_and_skip_one_that_cannot_be_read() -> None:
    counts: list[int | Exception] = [800, ConnectionError("nats away"), 300, 0]
    asked = 0

    async def left() -> int:
        nonlocal asked
        got = counts[min(asked, len(counts) - 1)]
        asked += 1
        if isinstance(got, Exception):
            raise got
        return got

    out = io.StringIO()
    done = asyncio.Event()
    task = asyncio.create_task(report_progress(left, 1_000, time.monotonic(), 0.001, out, done))
    async with asyncio.timeout(5):
        while asked < len(counts):
            await asyncio.sleep(0.001)
    done.set()
    async with asyncio.timeout(5):
        await task
    lines = out.getvalue().splitlines()
    # The unreadable count said nothing, and did not end the reports.
    assert [line.split(" events applied")[0] for line in lines[:3]] == [
        "rebuild: 200 of 1,000",
        "rebuild: 700 of 1,000",
        "rebuild: 1,000 of 1,000",
    ]
    assert all(line.startswith("rebuild: ") for line in lines)


async def test_the_reports_end_when_the_replay_does_even_if_a_cancellation_is_lost() -> None:
    # A count that swallows the cancellation sent to end the reports, as asyncio.wait_for does
    # in Python 3.11 when its result arrives as it is cancelled (nats-py's next_msg uses it).
    counting = asyncio.Event()

    async def left() -> int:
        counting.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return 5  # the cancellation lost
        return 5

    out = io.StringIO()
    done = asyncio.Event()
    task = asyncio.create_task(report_progress(left, 10, time.monotonic(), 0.001, out, done))
    async with asyncio.timeout(5):
        await counting.wait()
    done.set()
    task.cancel()
    async with asyncio.timeout(5):  # before the fix: the reports went on for ever
        await asyncio.gather(task, return_exceptions=True)
    assert task.done()
    assert out.getvalue() == ""  # nothing said once the replay was over
