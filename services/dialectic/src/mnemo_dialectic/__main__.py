"""python -m mnemo_dialectic: the dialectic alone (similarity search needs QDRANT_URL)."""

from __future__ import annotations

from mnemo_dialectic.app import run
from mnemo_runtime.process import main_stage

if __name__ == "__main__":
    main_stage("dialectic", run)
