"""The host's reads signal: what the answering process marks, another process reads."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemo_runtime import reads_signal
from mnemo_runtime.reads_signal import ReadsSignal, open_reads_signal


def test_a_read_marked_by_the_writer_is_seen_by_a_reader_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run" / "reads.signal"
    writer = open_reads_signal(path, writer=True)
    reader = open_reads_signal(path, writer=False)
    assert writer is not None and reader is not None
    try:
        time.sleep(0.02)
        assert not reader.busy(quiet_s=0.01)
        with writer.reading():
            assert reader.busy(quiet_s=0.0)
            with writer.reading():  # two at once
                pass
            assert reader.busy(quiet_s=0.0)  # one still runs
        # Just ended: busy within the quiet time, free after it.
        assert reader.busy(quiet_s=60.0)
        assert not reader.busy(quiet_s=0.0)
    finally:
        writer.close()
        reader.close()


def test_a_count_left_by_a_dead_writer_goes_stale_and_a_new_writer_starts_at_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "reads.signal"
    dead = ReadsSignal(path, writer=True)
    answering = dead.reading()
    answering.__enter__()  # never left: the process died answering
    reader = ReadsSignal(path)
    assert reader.busy(quiet_s=0.0)
    monkeypatch.setattr(reads_signal, "STALE_S", 0.0)
    assert not reader.busy(quiet_s=0.0)
    monkeypatch.setattr(reads_signal, "STALE_S", 300.0)
    assert reader.busy(quiet_s=0.0)
    ReadsSignal(path, writer=True).close()  # the process answering again, started anew
    assert not reader.busy(quiet_s=0.0)
    reader.close()
    del answering
    dead.close()


def test_a_count_left_by_a_killed_writer_is_read_as_none_at_once(tmp_path: Path) -> None:
    path = tmp_path / "reads.signal"
    code = (
        "import os, sys; from pathlib import Path;"
        "from mnemo_runtime.reads_signal import ReadsSignal;"
        "w = ReadsSignal(Path(sys.argv[1]), writer=True); m = w.reading(); m.__enter__();"
        "print('marked', flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "marked"
        reader = ReadsSignal(path)
        assert reader.busy(quiet_s=0.0)  # answering, alive
        child.kill()
        child.wait(timeout=10)
        assert not reader.busy(quiet_s=0.0)  # killed mid-read: nothing holds the host back
        reader.close()
    finally:
        if child.poll() is None:
            child.kill()


def test_only_the_writer_marks_reads_and_without_a_path_there_is_no_signal(
    tmp_path: Path,
) -> None:
    assert open_reads_signal(None, writer=True) is None
    reader = ReadsSignal(tmp_path / "reads.signal")
    with pytest.raises(RuntimeError, match="only the process"), reader.reading():
        pass
    reader.close()
