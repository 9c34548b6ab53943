"""A property-based fuzzer (schemathesis) over /openapi.json against a real stack: no request may
get a 5xx, and afterwards no projection may be stalled.

Two passes: every value generated (ids included), then the path ids pinned to a workspace,
session and peer that exist, so generated bodies reach the routes' own logic. Bounded per
operation (``MNEMO_FUZZ_EXAMPLES``, default 25); the seed is printed, and ``MNEMO_FUZZ_SEED``
replays a run.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .conftest import wait_until

EXAMPLES = int(os.environ.get("MNEMO_FUZZ_EXAMPLES", "25"))
ST = Path(sys.executable).parent / "st"


def _pinned(tmp_path: Path) -> Path:
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        '[parameters]\nworkspace_id = "fz"\nsession_id = "fs"\npeer_id = "fp"\n', encoding="utf-8"
    )
    return config


def _run(url: str, seed: int, config: Path | None, key: str) -> subprocess.CompletedProcess[str]:
    command = [str(ST)]
    if config is not None:
        command += ["--config-file", str(config)]
    command += [
        "run",
        f"{url}/openapi.json",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        str(EXAMPLES),
        "--seed",
        str(seed),
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--generation-database",
        "none",
        "--no-color",
        "--exclude-path",
        "/ready",
        "--exclude-path",
        "/health",
        "--max-failures",
        "5",
        # Every request with the admin key: the fuzzer reaches the routes' own logic.
        "--header",
        f"Authorization: Bearer {key}",
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=1200)


def test_the_fuzzer_finds_no_server_error_and_leaves_no_stalled_projection(
    own_nats, fresh_database, spawn, tmp_path, admin
):
    stack = spawn(own_nats, fresh_database).start()
    url = stack.url
    seed = int(os.environ.get("MNEMO_FUZZ_SEED") or random.randrange(2**31))
    print(
        f"fuzz seed {seed} (replay with MNEMO_FUZZ_SEED={seed}); {EXAMPLES} examples per operation"
    )
    assert httpx.post(f"{url}/v3/workspaces", json={"id": "fz"}, headers=admin).status_code == 201
    httpx.post(
        f"{url}/v3/workspaces/fz/sessions", json={"id": "fs", "peers": {"fp": {}}}, headers=admin
    )
    httpx.post(
        f"{url}/v3/workspaces/fz/sessions/fs/messages",
        json={"messages": [{"peer_id": "fp", "content": "I moved to Lisbon last week."}]},
        headers=admin,
    ).raise_for_status()
    for name, config in (("generated ids", None), ("pinned ids", _pinned(tmp_path))):
        started = time.monotonic()
        run = _run(url, seed, config, admin["Authorization"].removeprefix("Bearer "))
        summary = [line for line in run.stdout.splitlines() if "generated" in line]
        print(
            f"{name}: {summary[-1].strip() if summary else '?'} in {time.monotonic() - started:.0f} s"
        )
        assert run.returncode == 0, (
            f"{name}, seed {seed}: replay with MNEMO_FUZZ_SEED={seed}\n{run.stdout[-6000:]}"
            f"\n{run.stderr[-2000:]}"
        )
    # Nothing it sent stalled or poisoned a projection: the whole system is ready again.
    try:
        wait_until(lambda: httpx.get(f"{url}/ready", timeout=10).status_code == 200, timeout=120)
    except AssertionError as err:
        # What /ready names, and the stack's own account: its last warnings and errors.
        ready = httpx.get(f"{url}/ready", timeout=10)
        log = stack.log.read_text().splitlines()
        errors = [line for line in log if '"level": "error"' in line or '"warning"' in line]
        raise AssertionError(
            f"seed {seed}: /ready {ready.status_code} {ready.text}\n" + "\n".join(errors[-20:])
        ) from err
