"""python -m mnemo_summarizer: the summarizer alone."""

from __future__ import annotations

from mnemo_runtime.process import main_stage
from mnemo_summarizer.app import run

if __name__ == "__main__":
    main_stage("summarizer", run)
