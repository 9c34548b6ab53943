"""CPU time from /proc: parsing, shares, a starved background process told from a stuck one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemo_cli import proc_cpu
from mnemo_cli.local import background_priority
from mnemo_cli.proc_cpu import Reading, Share

LINUX = Path("/proc/self/stat").exists()
# /proc/stat's first lines: user nice system idle iowait irq softirq steal guest guest_nice
STAT = "cpu  {busy} 0 0 {idle} {iowait} 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2\n"


def _stat_line(pid: int, comm: str, utime: int, stime: int) -> str:
    rest = ["S", "1"] + ["0"] * 9 + [str(utime), str(stime), "0", "0"] + ["0"] * 30
    return f"{pid} ({comm}) " + " ".join(rest) + "\n"


def _fake_proc(tmp_path: Path, pid: int, *, busy: int, idle: int, utime: int) -> Path:
    (tmp_path / str(pid)).mkdir(exist_ok=True)
    (tmp_path / str(pid) / "stat").write_text(_stat_line(pid, "mnemo) (x", utime, 0))
    (tmp_path / "stat").write_text(STAT.format(busy=busy, idle=idle, iowait=0, steal=0))
    return tmp_path


def test_host_ticks_count_idle_and_io_wait_as_not_busy_and_steal_as_busy() -> None:
    busy, total = proc_cpu.host_ticks(STAT.format(busy=600, idle=300, iowait=50, steal=50))
    assert (busy, total) == (650, 1000)
    with pytest.raises(ValueError, match="cpu"):
        proc_cpu.host_ticks("intr 1 2\n")


def test_a_command_name_with_parentheses_and_spaces_does_not_shift_the_fields(
    tmp_path: Path,
) -> None:
    proc = _fake_proc(tmp_path, 4242, busy=0, idle=0, utime=250)
    fields = proc_cpu.stat_fields(4242, proc)
    assert fields is not None
    parent, own, _ = proc_cpu.parse_stat(fields)
    assert parent == 1
    assert own == pytest.approx(250 / proc_cpu.TICK)
    assert proc_cpu.stat_fields(4243, proc) is None


def test_a_share_is_per_second_and_per_cpu() -> None:
    before = Reading(at=10.0, process_s=5.0, host_busy=1_000, host_all=2_000)
    after = Reading(at=20.0, process_s=5.5, host_busy=2_900, host_all=4_000)
    got = proc_cpu.share(before, after)
    assert got == Share(seconds=10.0, process_cpus=0.05, host_busy=0.95)
    gone = Reading(at=20.0, process_s=None, host_busy=2_900, host_all=4_000)
    assert proc_cpu.share(before, gone) is None
    assert proc_cpu.share(before, before) is None


@pytest.mark.parametrize(
    ("process_cpus", "host_busy", "starved"),
    [(0.01, 0.98, True), (0.01, 0.5, False), (0.3, 0.98, False), (0.049, 0.9, True)],
)
def test_starved_means_next_to_nothing_while_the_host_has_nothing_to_spare(
    process_cpus: float, host_busy: float, starved: bool
) -> None:
    assert Share(60.0, process_cpus, host_busy).starved is starved


def test_the_memory_process_starved_on_a_busy_host_is_told_apart_from_a_stuck_one(
    tmp_path: Path,
) -> None:
    pid = os.getpid()  # its priority is read from the kernel; its times from the fake /proc
    ticks = proc_cpu.TICK
    before = Reading(time.monotonic() - 100.0, 1.0, host_busy=0, host_all=0)
    # 100 s later: it got 1 s of CPU (1 % of one) while the host's CPUs were 98 % busy.
    proc = _fake_proc(tmp_path, pid, busy=196 * ticks, idle=4 * ticks, utime=2 * ticks)
    said = proc_cpu.memory_since(pid, before, proc)
    assert said.startswith("the memory process is waiting for CPU: it had 1 % of a CPU")
    assert "98 % busy" in said
    assert "MNEMO_MEMORY_PRIORITY" in said
    # The same share on a host with CPU to spare is no starvation: just the figures.
    proc = _fake_proc(tmp_path, pid, busy=20 * ticks, idle=180 * ticks, utime=2 * ticks)
    said = proc_cpu.memory_since(pid, before, proc)
    assert said.startswith("the memory process: it had 1 % of a CPU")
    assert "10 % busy" in said
    assert proc_cpu.memory_since(pid, None, proc) == ""


@pytest.mark.skipif(not LINUX, reason="needs /proc")
def test_a_real_process_s_cpu_is_read_as_it_spends_it() -> None:
    before = proc_cpu.read(os.getpid())
    assert before is not None and before.process_s is not None
    start = time.process_time()
    while time.process_time() - start < 0.2:
        pass
    after = proc_cpu.read(os.getpid())
    assert after is not None and after.process_s is not None
    assert after.process_s - before.process_s >= 0.1
    got = proc_cpu.share(before, after)
    assert got is not None and got.process_cpus > 0
    lines = proc_cpu.memory_lines(os.getpid(), seconds=0.05)
    assert lines[0].startswith("cpu       memory ")
    assert f"(priority: {proc_cpu.priority(os.getpid())})" in lines[0]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="needs Linux's SCHED_IDLE")
@pytest.mark.parametrize(("setting", "seen"), [("idle", "idle"), ("7", "niceness 7")])
def test_a_process_s_priority_is_read_from_the_kernel(setting: str, seen: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        preexec_fn=background_priority(setting),
    )
    try:
        how = proc_cpu.priority(child.pid)
        assert how is not None and how.startswith(seen)
    finally:
        child.kill()
        child.wait()
    assert proc_cpu.priority(child.pid) is None
