"""Which processes of a host write the reads signal, and which wait on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo_cli.serve import _reads
from mnemo_runtime.precedence import precedence
from mnemo_runtime.settings import InfraSettings


def _settings(path: Path | None, yields: bool) -> InfraSettings:
    return InfraSettings.model_validate(
        {"MNEMO_READS_SIGNAL": str(path) if path else None, "MNEMO_YIELD_TO_READS": yields}
    )


@pytest.mark.parametrize(
    ("components", "yields", "role"),
    [
        (["context", "dialectic"], False, "writer"),
        (["projector", "deriver", "summarizer", "dreamer"], True, "reader"),
        # Answering and forming memory in one process: it writes; its own reads hold it back.
        (["projector", "deriver", "context", "dialectic"], True, "writer"),
        (["gateway", "ingest", "grpc"], False, None),
        (["projector"], False, None),  # the write path's projector never waits on reads
    ],
)
async def test_a_process_writes_the_signal_if_it_answers_and_reads_it_if_it_yields(
    tmp_path: Path, components: list[str], yields: bool, role: str | None
) -> None:
    signal = _reads(components, _settings(tmp_path / "reads.signal", yields))
    try:
        assert (None if signal is None else "writer" if signal.writer else "reader") == role
    finally:
        precedence().share_reads(None)
        if signal is not None:
            signal.close()


async def test_without_a_signal_path_no_process_takes_part() -> None:
    assert _reads(["context"], _settings(None, True)) is None
