"""Batching rules, per representation: token target, idle debounce, maximum age. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mnemo_runtime.deadletters import Letter
from mnemo_schema.events import MessagePosted


@dataclass(frozen=True)
class RepKey:
    """What a batch is for: one representation (its line), under one set of the application's
    instructions. Keys compare by representation only: messages posted under other
    instructions go into a batch of their own, in the same line, so the line stays in order."""

    workspace: str
    observer: str
    observed: str
    instructions: str | None = field(default=None, compare=False)


@dataclass
class Item:
    """One message for one representation, with the turn before it if another peer spoke it."""

    seq: int
    message: MessagePosted
    context: MessagePosted | None = None
    # The delivery this item settles (opaque here); a redelivered message gets a new one.
    owner: object | None = field(default=None, compare=False)
    # The session's previous message is not known yet: it is read from the log before the
    # batch is derived (and shown only if another peer wrote it).
    context_unknown: bool = False


@dataclass
class Batch:
    key: RepKey
    opened_at: float
    last_added_at: float
    items: list[Item] = field(default_factory=list)
    tokens: int = 0

    @property
    def newest(self) -> int:
        """The position of its newest message."""
        return max(i.seq for i in self.items)

    @property
    def sessions(self) -> list[str]:
        """The sessions of its messages."""
        return sorted({i.message.session_id for i in self.items})

    def alone(self, item: Item) -> Batch:
        """One of its messages as a batch of its own."""
        return Batch(self.key, self.opened_at, self.last_added_at, [item])

    def letter(self, reason: str, attempts: int) -> Letter:
        """The dead letter that parks it."""
        k, seqs = self.key, [i.seq for i in self.items]
        return Letter(
            key=f"{k.workspace}/{k.observer}/{k.observed}/{seqs[0]}-{seqs[-1]}",
            reason=reason,
            stream_seq=seqs[0] if len(seqs) == 1 else None,
            workspace=k.workspace,
            session_id=self.items[0].message.session_id,
            observer=k.observer,
            observed=k.observed,
            attempts=attempts,
            detail={"seqs": seqs, "message_ids": [i.message.message_id for i in self.items]},
        )


class Batcher:
    """Holds open batches; hands back the ones whose flush rule fired."""

    def __init__(self, token_target: int, idle_s: float, max_age_s: float) -> None:
        self.token_target = token_target
        self.idle_s = idle_s
        self.max_age_s = max_age_s
        self._open: dict[RepKey, Batch] = {}

    def add(self, key: RepKey, item: Item, now: float) -> list[Batch]:
        """Add ``item``; the batches it closed, in order: the open one of other instructions,
        and its own once it reaches the token target."""
        closed = []
        batch = self._open.get(key)
        if batch is not None and batch.key.instructions != key.instructions:
            closed.append(self._open.pop(key))
            batch = None
        if batch is None:
            batch = self._open[key] = Batch(key, opened_at=now, last_added_at=now)
        batch.items.append(item)
        batch.tokens += item.message.token_count + (item.context.token_count if item.context else 0)
        batch.last_added_at = now
        if batch.tokens >= self.token_target:
            closed.append(self._open.pop(key))
        return closed

    def due(self, now: float) -> list[Batch]:
        """Close and return the batches idle for ``idle_s`` or open for ``max_age_s``."""
        ready = [
            k
            for k, b in self._open.items()
            if now - b.last_added_at >= self.idle_s or now - b.opened_at >= self.max_age_s
        ]
        return [self._open.pop(k) for k in ready]

    def drop(self, keep: Callable[[RepKey], bool]) -> list[Batch]:
        """Remove and return the open batches of the representations ``keep`` rejects."""
        gone = [k for k in self._open if not keep(k)]
        return [self._open.pop(k) for k in gone]

    def drain(self) -> list[Batch]:
        """Close and return every open batch."""
        out = list(self._open.values())
        self._open.clear()
        return out

    def __len__(self) -> int:
        return len(self._open)
