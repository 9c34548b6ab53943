"""python -m mnemo_dreamer: the dreamer alone (similarity search needs QDRANT_URL)."""

from __future__ import annotations

from mnemo_dreamer.app import run
from mnemo_runtime.process import main_stage

if __name__ == "__main__":
    main_stage("dreamer", run)
