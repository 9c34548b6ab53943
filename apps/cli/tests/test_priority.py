"""The memory process's CPU priority under ``mnemo up``: the setting and what a child gets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo_cli.local import MEMORY_PRIORITY, background_priority, group_environment

PROBE = "import os; print(os.sched_getscheduler(0), os.nice(0))"
GROUP = (
    "import sys; from mnemo_runtime.priority import group_niceness; group_niceness(int(sys.argv[1]));"
    " print(open('/proc/self/autogroup').read().split()[-1])"
)


def _autogroups() -> bool:
    """Whether this kernel reports scheduling groups ("/autogroup-N nice K"); some sandboxes
    have the file but leave it empty."""
    try:
        return Path("/proc/self/autogroup").read_text().split()[-2:-1] == ["nice"]
    except OSError:
        return False


AUTOGROUPS = _autogroups()


def _child(value: str) -> tuple[int, int]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        preexec_fn=background_priority(value),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    policy, niceness = done.stdout.split()
    return int(policy), int(niceness)


def _group_niceness(value: str, session: bool) -> int:
    """The niceness of its scheduling group a child reports once it has given the group what
    ``up`` tells it to (``session``: as ``up`` starts it, leading a session of its own)."""
    niceness = group_environment(value)["MNEMO_GROUP_NICENESS"]
    done = subprocess.run(
        [sys.executable, "-c", GROUP, niceness],
        start_new_session=session,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout)


def _own_group_niceness() -> int:
    return int(Path("/proc/self/autogroup").read_text().split()[-1])


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


@pytest.mark.skipif(not AUTOGROUPS, reason="a kernel without autogroups")
@pytest.mark.parametrize(("value", "niceness"), [("idle", 19), ("7", 7)])
def test_a_session_leaders_scheduling_group_takes_the_priority_too(
    value: str, niceness: int
) -> None:
    # The scheduler shares the CPU between groups first: the group must yield, not only the
    # process inside it.
    ours = _own_group_niceness()
    assert _group_niceness(value, session=True) == niceness
    assert _own_group_niceness() == ours


@pytest.mark.skipif(not AUTOGROUPS, reason="a kernel without autogroups")
def test_a_child_in_its_parents_session_leaves_the_shared_group_alone() -> None:
    ours = _own_group_niceness()
    assert _group_niceness("idle", session=False) == ours
    assert _own_group_niceness() == ours


def test_normal_leaves_the_child_alone() -> None:
    assert background_priority("normal") is None
    assert group_environment(" Normal") == {}


@pytest.mark.parametrize("value", ["fast", "20", "-1", "", "1.5"])
def test_anything_else_is_refused_naming_the_setting(value: str) -> None:
    with pytest.raises(SystemExit, match=MEMORY_PRIORITY):
        background_priority(value)
    with pytest.raises(SystemExit, match=MEMORY_PRIORITY):
        group_environment(value)


def test_the_memory_process_renices_its_backends_only_on_the_postgres_up_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mnemo_cli.local import _group

    monkeypatch.setenv(MEMORY_PRIORITY, "idle")
    local = _group("memory", local_postgres=True)
    assert local["MNEMO_PG_BACKEND_NICENESS"] == "19"
    assert local["MNEMO_PG_BACKEND_IDLE"] == "true"  # SCHED_IDLE too, as the process itself
    elsewhere = _group("memory", local_postgres=False)
    assert "MNEMO_PG_BACKEND_NICENESS" not in elsewhere
    assert "MNEMO_PG_BACKEND_IDLE" not in elsewhere
    assert _group("read", local_postgres=True) == {}
    monkeypatch.setenv(MEMORY_PRIORITY, "10")  # a niceness: the backends' too, not SCHED_IDLE
    niced = _group("memory", local_postgres=True)
    assert niced["MNEMO_PG_BACKEND_NICENESS"] == "10"
    assert "MNEMO_PG_BACKEND_IDLE" not in niced
    monkeypatch.setenv(MEMORY_PRIORITY, "normal")
    assert _group("memory", local_postgres=True) == {}


def _niceness(pid: int) -> int:
    # Field 19 of /proc/<pid>/stat, after the parenthesised command name.
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _group_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A process named ``postgres`` leading a session of its own, as each backend does, and one
    that is not a postgres process."""
    sleep = Path("/bin/sleep")
    named = tmp_path / "postgres"
    named.write_bytes(sleep.read_bytes())
    named.chmod(0o755)
    procs = [
        subprocess.Popen([str(named), "60"], start_new_session=True),
        subprocess.Popen([str(sleep), "60"], start_new_session=True),
    ]
    yield procs[0].pid, procs[1].pid
    for p in procs:
        p.kill()
        p.wait()


def test_backends_are_reniced_from_start_on_and_others_left_alone(
    stand_in: tuple[int, int],
) -> None:
    from mnemo_runtime.priority import BackendPriority

    backend, other = stand_in
    base = _niceness(backend)
    priority = BackendPriority(12)
    priority.joined(backend)
    priority.joined(other)
    assert _niceness(backend) == base  # not before the process has started
    priority.start()
    assert _niceness(backend) == max(base, 12)
    assert _niceness(other) == base  # not a postgres process: left alone
    if AUTOGROUPS:
        assert _group_of(backend) == 12
        assert _group_of(other) == base


def test_unset_leaves_every_backend_alone(stand_in: tuple[int, int]) -> None:
    from mnemo_runtime.priority import BackendPriority

    backend, _ = stand_in
    base = _niceness(backend)
    priority = BackendPriority(None)
    priority.start()
    priority.joined(backend)
    assert _niceness(backend) == base


def test_the_memory_process_yields_to_reads_only_at_a_background_priority(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mnemo_cli.local import _group

    monkeypatch.setenv(MEMORY_PRIORITY, "idle")
    assert _group("memory", local_postgres=False)["MNEMO_YIELD_TO_READS"] == "true"
    monkeypatch.setenv(MEMORY_PRIORITY, "10")
    assert _group("memory", local_postgres=False)["MNEMO_YIELD_TO_READS"] == "true"
    monkeypatch.setenv("MNEMO_YIELD_TO_READS", "false")  # asked for: formation never waits
    assert _group("memory", local_postgres=False)["MNEMO_YIELD_TO_READS"] == "false"
    monkeypatch.delenv("MNEMO_YIELD_TO_READS")
    assert "MNEMO_YIELD_TO_READS" not in _group("read", local_postgres=False)
    monkeypatch.setenv(MEMORY_PRIORITY, "normal")
    assert "MNEMO_YIELD_TO_READS" not in _group("memory", local_postgres=False)
