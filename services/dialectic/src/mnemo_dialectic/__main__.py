"""python -m mnemo_dialectic: the dialectic alone (its searches go to the context service's engine)."""

from __future__ import annotations

from mnemo_dialectic.app import run
from mnemo_runtime.process import main_stage

if __name__ == "__main__":
    main_stage("dialectic", run, memory_adapters=False)
