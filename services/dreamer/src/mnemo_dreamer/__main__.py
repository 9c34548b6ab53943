"""python -m mnemo_dreamer: the dreamer alone (it asks the context service's engine for similar observations)."""

from __future__ import annotations

from mnemo_dreamer.app import run
from mnemo_runtime.process import main_stage

if __name__ == "__main__":
    main_stage("dreamer", run, memory_adapters=False)
