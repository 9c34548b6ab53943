"""python -m mnemo_deriver: the deriver alone."""

from __future__ import annotations

import asyncio

from mnemo_deriver.app import run
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.infra import Infra
from mnemo_runtime.process import main


async def _run(infra: Infra, stop: asyncio.Event) -> None:
    await run(DeriverSettings(), infra, stop)


if __name__ == "__main__":
    main("deriver", _run)
