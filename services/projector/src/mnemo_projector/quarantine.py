"""What a projection does with an event it cannot apply: quarantine it and go on.

An event that does not decode is quarantined at once. An event that fails to apply for a reason
of its own (not the database or the bus being down, which is retried without limit) is tried
``attempts`` times, alone, and then quarantined: a dead letter is recorded in the same
transaction that moves the position past it. Replays meet the same event again; an operator's
decision is honoured then: a discarded event is passed over, a redriven one is applied in its
corrected form.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from pydantic import ValidationError

from mnemo_runtime.deadletters import DeadLetters, Letter, undecodable
from mnemo_runtime.pg import Connection
from mnemo_schema.events import Event, decode_event


class Delivered:
    """One event as the projection received it: its bytes, decoded when first asked for.

    A projection behind its log holds thousands of received events; decoded as they arrive,
    they would cost their decoding at the ingest rate, whatever else the host is doing, and the
    memory of their objects (about five times their bytes) for as long as they wait. Decoded
    when their batch is taken to be applied, they cost it a batch at a time.
    """

    __slots__ = ("_error", "_event", "data", "seq", "subject")

    def __init__(self, seq: int, subject: str, data: bytes) -> None:
        self.seq = seq
        self.subject = subject
        self.data = data
        self._event: Event | None = None
        self._error: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Delivered):
            return NotImplemented
        return (self.seq, self.subject, self.data) == (other.seq, other.subject, other.data)

    def __repr__(self) -> str:
        return f"Delivered(seq={self.seq}, subject={self.subject!r})"

    @classmethod
    def of(cls, m: Msg) -> Delivered:
        """The event ``m`` carries, not yet decoded."""
        return cls(int(m.metadata.sequence.stream), m.subject, m.data)

    @property
    def event(self) -> Event | None:
        """The event, or None if it does not decode (``error`` says why)."""
        if self._event is None and self._error is None:
            try:
                self._event = decode_event(self.data)
            except ValidationError as err:
                self._error = undecodable(err)
        return self._event

    @property
    def error(self) -> str | None:
        """Why the event does not decode, or None if it does."""
        return None if self.event is not None else self._error


@dataclass
class RetryPolicy:
    """How often one event is tried before it is quarantined, and the pauses between tries."""

    attempts: int = 3
    pauses_s: Sequence[float] = field(default_factory=lambda: (0.2, 0.6))

    async def pause(self, attempt: int) -> None:
        """Wait before try ``attempt + 1``."""
        if self.pauses_s:
            await asyncio.sleep(self.pauses_s[min(attempt - 1, len(self.pauses_s) - 1)])


async def settle(
    conn: Connection, dead: DeadLetters, item: Delivered, reason: str, attempts: int
) -> tuple[Event | None, tuple[int, Letter] | None]:
    """Inside the caller's transaction: what to apply in place of a failing event, if anything,
    and the letter recorded for it (to announce after commit).

    A redriven letter with a corrected event gives that event; a discarded one gives nothing;
    otherwise the event is quarantined.
    """
    settled = await dead.resolution(conn, str(item.seq))
    if settled is not None and settled["status"] == "discarded":
        return None, None
    if settled is not None and settled["status"] == "redriven" and settled["fixed_data"]:
        try:
            return decode_event(bytes(settled["fixed_data"])), None
        except ValidationError:
            pass  # the correction itself no longer decodes: quarantine the event again
    letter = Letter.of_event(item.seq, item.subject, item.data, reason, item.event, attempts)
    return None, (await dead.record(conn, letter), letter)
