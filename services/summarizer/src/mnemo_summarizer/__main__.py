"""python -m mnemo_summarizer: the summarizer alone."""

from __future__ import annotations

import asyncio

from mnemo_runtime.infra import Infra
from mnemo_runtime.process import main
from mnemo_summarizer.app import run


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    await run(infra, stop)


if __name__ == "__main__":
    main("summarizer", _run)
