"""Redriving quarantined events: what ``mnemo dlq redrive`` asks of a running projection.

The operator marks a letter ``redrive`` (with a corrected event, or none after a code fix); the
projection that owns it applies it between batches, at its original stream position, in one
transaction with the letter's resolution. A redrive that fails again leaves the letter open with
the new reason.
"""

from __future__ import annotations

import time
from typing import Any

from nats.js import JetStreamContext
from pydantic import ValidationError

from mnemo_projector.positions import Projection
from mnemo_runtime.deadletters import DeadLetters, letter_partition, sanitised, transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.pg import Pool
from mnemo_schema import subjects
from mnemo_schema.events import decode_event

log = get_logger("mnemo.projector")


class Redrives:
    """Applies the letters of one projection that an operator asked to redrive."""

    def __init__(
        self,
        dead: DeadLetters,
        projection: Projection,
        js: JetStreamContext,
        pool: Pool,
        partition: int = 0,
        partitions: int = 1,
    ) -> None:
        self._dead = dead
        self._projection = projection
        self._js = js
        self._pool = pool
        self._partition = partition
        self._partitions = partitions
        self._checked = float("-inf")

    async def run(self, at_most_every_s: float = 0.0) -> None:
        """Redrive what was asked for (looked up at most every ``at_most_every_s``)."""
        now = time.monotonic()
        if now - self._checked < at_most_every_s:
            return
        self._checked = now
        try:
            letters = await self._dead.redrives()
        except Exception as err:  # the database is away: the next check will see them
            log.debug("projector.redrives_unavailable", error=repr(err))
            return
        for letter in letters:
            # Each letter is redriven by the projector of its event's partition.
            if letter_partition(letter, self._partitions) == self._partition:
                await self._one(letter)

    async def _data(self, letter: dict[str, Any]) -> bytes | None:
        for column in ("fixed_data", "data"):
            if letter[column] is not None:
                return bytes(letter[column])
        if letter["stream_seq"] is None:
            return None
        msg = await self._js.get_msg(subjects.STREAM, seq=int(letter["stream_seq"]))
        return msg.data

    async def _one(self, letter: dict[str, Any]) -> None:
        try:
            data = await self._data(letter)
            if data is None:
                await self._dead.fail_redrive(letter["id"], "nothing to redrive: no event data")
                return
            event = decode_event(data)
        except ValidationError as err:
            await self._dead.fail_redrive(letter["id"], sanitised(f"undecodable event: {err}"))
            return
        except Exception as err:
            log.warning("projector.redrive_unreadable", letter=letter["id"], error=repr(err))
            return
        try:
            async with self._pool.connection() as conn, conn.transaction():
                await self._projection.apply(conn, [(int(letter["stream_seq"] or 0), event)])
                await self._dead.resolve(conn, letter["id"])
        except Exception as err:
            if transient(err):
                return  # tried again at the next check
            await self._dead.fail_redrive(letter["id"], sanitised(repr(err)))
            return
        log.info("projector.redriven", projection=self._projection.name, letter=letter["id"])
