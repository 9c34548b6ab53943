"""python -m mnemo_context: the context service and its retrieval engine alone."""

from __future__ import annotations

from mnemo_context.app import run
from mnemo_runtime.process import main_stage

if __name__ == "__main__":
    main_stage("context", run)
