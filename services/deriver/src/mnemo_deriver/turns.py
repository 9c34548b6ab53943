"""The turn before each message, as the log has it: what a batch shows as context.

A batch shows each message with the session's previous message when another peer wrote it.
Which message that is must not depend on which replica derives the session, or on what it
happened to see before: a partition's messages are delivered in log order, so while one replica
reads a partition, the newest message of a session it was delivered is the turn before the next
one. Otherwise (the first message of a session since the replica took the partition, or a
message delivered again) the turn is read from the log: the session's newest message before it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from mnemo_deriver.batching import Batch
from mnemo_schema.events import MessagePosted


class TurnLog(Protocol):
    async def before(self, workspace: str, session_id: str, seq: int) -> MessagePosted | None:
        """The session's newest message before position ``seq``, if any."""
        ...


@dataclass(frozen=True)
class Turn:
    """What delivery order tells of a message's preceding turn."""

    # The preceding message, when delivery order makes it certain (None: none, or unknown).
    message: MessagePosted | None
    # Whether it must be read from the log before the message is derived.
    unknown: bool = False


class PrecedingTurns:
    """Each session's newest delivered message, per partition, since the partition was taken."""

    def __init__(self, max_sessions: int = 100_000) -> None:
        self._max = max_sessions
        # (workspace, session) -> (partition, newest message delivered in order)
        self._newest: OrderedDict[tuple[str, str], tuple[int, MessagePosted]] = OrderedDict()
        # partition -> the newest position delivered in order since it was taken
        self._high: dict[int, int] = {}

    def delivered(self, partition: int, seq: int, event: MessagePosted) -> Turn:
        """Note a delivery; what is known of the turn before it."""
        key = (event.workspace, event.session_id)
        if seq <= self._high.get(partition, 0):
            return Turn(None, unknown=True)  # delivered again, out of order: ask the log
        self._high[partition] = seq
        known = self._newest.pop(key, None)
        self._newest[key] = (partition, event)
        while len(self._newest) > self._max:
            self._newest.popitem(last=False)
        if known is None or known[0] != partition:
            return Turn(None, unknown=True)
        return Turn(known[1])

    def forget(self, partition: int) -> None:
        """The partition was handed over: what was seen of it proves nothing any more."""
        self._high.pop(partition, None)
        for key in [k for k, (p, _) in self._newest.items() if p == partition]:
            del self._newest[key]


async def resolve_turns(batch: Batch, log: TurnLog) -> None:
    """Read from the log the preceding turns delivery order did not make certain."""
    found: dict[int, MessagePosted | None] = {}
    for item in batch.items:
        if not item.context_unknown:
            continue
        if item.seq not in found:
            e = item.message
            found[item.seq] = await log.before(e.workspace, e.session_id, item.seq)
        prev = found[item.seq]
        item.context = prev if prev is not None and prev.peer_id != item.message.peer_id else None
        item.context_unknown = False
