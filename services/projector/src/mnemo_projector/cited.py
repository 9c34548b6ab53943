"""The messages observations cite, read from the log by position (JetStream's direct get).

Events never change, so what was read is kept (the most recent ``size`` of them): a batch of
observations usually cites few messages, the same ones many times.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence

from nats.aio.client import Client as NATS
from pydantic import ValidationError

from mnemo_runtime import direct
from mnemo_schema.events import MessagePosted, decode_event

_AT_ONCE = 32


class LogMessages:
    def __init__(self, nc: NATS, size: int = 20_000) -> None:
        self._nc = nc
        self._size = size
        self._kept: OrderedDict[int, MessagePosted | None] = OrderedDict()

    async def at(self, seqs: Sequence[int]) -> dict[int, MessagePosted | None]:
        missing = [s for s in dict.fromkeys(seqs) if s not in self._kept]
        for i in range(0, len(missing), _AT_ONCE):
            chunk = missing[i : i + _AT_ONCE]
            found = await asyncio.gather(*(direct.at(self._nc, s) for s in chunk))
            for seq, stored in zip(chunk, found, strict=True):
                self._keep(seq, _message(stored))
        out = {}
        for s in seqs:
            out[s] = self._kept.get(s)
            if s in self._kept:
                self._kept.move_to_end(s)
        return out

    def _keep(self, seq: int, message: MessagePosted | None) -> None:
        self._kept[seq] = message
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)


def _message(stored: direct.Stored | None) -> MessagePosted | None:
    if stored is None:
        return None
    try:
        event = decode_event(stored.data)
    except ValidationError:
        return None
    return event if isinstance(event, MessagePosted) else None
