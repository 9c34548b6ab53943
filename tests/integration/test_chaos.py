"""The fault run (``mnemo chaos``), bounded: a few hundred messages posted while each process is
killed and started again, NATS is restarted and Postgres is restarted; then nothing acknowledged
is lost or doubled, no observation is doubled, the queue drains and /ready is 200.

The run starts a stack of its own (its own NATS and Postgres, in this test's folder, on free
ports), never the servers the rest of the suite shares: it restarts them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mnemo_cli.chaos import FAULTS, ChaosConfig, run

# What would point the run at servers it must not restart, or tie it to the suite's keys.
_SHARED = ("NATS_URL", "DATABASE_URL", "MNEMO_NATS_USER", "MNEMO_NATS_PASSWORD")


@pytest.mark.timeout(900)
async def test_every_fault_is_recovered_from_with_nothing_lost_or_doubled(tmp_path: Path):
    environ = {k: v for k, v in os.environ.items() if k not in _SHARED}
    config = ChaosConfig(
        state=tmp_path / "chaos",
        messages=600,
        rate=20.0,
        workers=4,
        outage_s=1.0,
        recovery_s=240.0,
        drain_s=300.0,
    )
    report = await run(config, environ, say=print)
    print(report.render())
    assert [f.name for f in report.faults] == list(FAULTS)
    assert not [f.name for f in report.faults if f.skipped], report.render()
    # Every fault came while messages were still being posted.
    assert all(f.acknowledged < report.messages for f in report.faults), report.render()
    failed = [f"{c.name}: {c.detail}" for c in report.checks if not c.ok]
    assert report.ok and not failed, report.render()
