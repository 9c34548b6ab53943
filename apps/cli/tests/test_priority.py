"""The memory process's CPU priority under ``mnemo up``: the setting and what a child gets."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mnemo_cli.local import MEMORY_PRIORITY, background_priority

PROBE = "import os; print(os.sched_getscheduler(0), os.nice(0))"


def _child(value: str) -> tuple[int, int]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], preexec_fn=background_priority(value),
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    policy, niceness = done.stdout.split()
    return int(policy), int(niceness)


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_idle_runs_the_child_under_sched_idle() -> None:
    policy, _ = _child(" Idle ")
    assert policy == os.SCHED_IDLE
    assert os.sched_getscheduler(0) != os.SCHED_IDLE  # the parent keeps its own


def test_a_niceness_is_added_to_the_childs() -> None:
    base = os.nice(0)
    policy, niceness = _child("7")
    assert niceness == min(base + 7, 19)
    assert policy == os.sched_getscheduler(0)


def test_normal_leaves_the_child_alone() -> None:
    assert background_priority("normal") is None


@pytest.mark.parametrize("value", ["fast", "20", "-1", "", "1.5"])
def test_anything_else_is_refused_naming_the_setting(value: str) -> None:
    with pytest.raises(SystemExit, match=MEMORY_PRIORITY):
        background_priority(value)
