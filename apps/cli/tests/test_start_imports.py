"""What a Mnemo process imports to start: not the libraries of the options it does not use."""

from __future__ import annotations

import json
import subprocess
import sys

# Each costs seconds of CPU to import, paid at every start of every process (and so again by a
# process killed and started again before it serves): scikit-learn for the training command's
# kappa, the Anthropic SDK when no stage uses Anthropic, qdrant-client without a Qdrant server.
UNUSED = ("sklearn", "anthropic", "qdrant_client")


def test_a_service_process_starts_without_the_libraries_of_options_it_does_not_use():
    code = (
        "import json, sys, mnemo_cli.__main__ as m, mnemo_cli.serve; m._parser();"
        f" print(json.dumps([n for n in {UNUSED!r} if n in sys.modules]))"
    )
    env = {"PATH": "/usr/bin:/bin"}  # no provider keys, no Qdrant URL: the local defaults
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
