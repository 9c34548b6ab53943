"""python -m mnemo_context: the context service alone (semantic slices need QDRANT_URL)."""

from __future__ import annotations

from mnemo_context.app import run
from mnemo_runtime.process import main_stage

if __name__ == "__main__":
    main_stage("context", run)
