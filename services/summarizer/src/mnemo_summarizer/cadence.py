"""When a session is due a short or a long summary, and what each summary must cover. Pure.

Each summary type keeps its own track: the previous summary of that type, how many messages it
covers, and the messages since. A track is due when the messages since its previous summary
reach its cadence, so with the default 20/60 a session gets short summaries at messages 20, 40,
60, ... and long ones at 60, 120, ... . State is rebuilt from the stored summaries and messages
(``SessionLog.restore``), so a restart neither loses nor repeats a summary.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from mnemo_schema.config import SummaryConfiguration
from mnemo_schema.summaries import SummaryType

KINDS: tuple[SummaryType, ...] = ("short", "long")


@dataclass(frozen=True)
class Turn:
    """One message of a session, as the summarizer sees it."""

    seq: int
    message_id: str
    peer_id: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class Cadence:
    """Whether a session is summarized, and every how many messages per type."""

    enabled: bool = True
    short: int = 20
    long: int = 60
    # The application's instructions for its summaries (its configuration's), if any.
    instructions: str | None = None

    def every(self, kind: SummaryType) -> int:
        return self.short if kind == "short" else self.long

    def overridden(self, configs: Iterable[SummaryConfiguration | None]) -> Cadence:
        """This cadence with each set field of ``configs`` applied in order (later wins)."""
        out = self
        for c in configs:
            if c is None:
                continue
            if c.enabled is not None:
                out = replace(out, enabled=c.enabled)
            if c.messages_per_short_summary is not None:
                out = replace(out, short=c.messages_per_short_summary)
            if c.messages_per_long_summary is not None:
                out = replace(out, long=c.messages_per_long_summary)
        return out


@dataclass(frozen=True)
class Stored:
    """The newest stored summary of one type."""

    content: str
    message_seq: int
    messages_covered: int


@dataclass(frozen=True)
class Job:
    """A summary to write: the previous one of its type merged with the turns since."""

    kind: SummaryType
    previous: str | None
    turns: tuple[Turn, ...]
    messages_covered: int

    @property
    def newest(self) -> Turn:
        return self.turns[-1]


@dataclass
class Track:
    kind: SummaryType
    previous: str | None = None
    covered: int = 0
    pending: list[Turn] = field(default_factory=list)


class SessionLog:
    """One session's summary tracks and the newest message counted."""

    def __init__(
        self, cadence: Cadence, tracks: Mapping[SummaryType, Track], last_seq: int
    ) -> None:
        self.cadence = cadence
        self.tracks = dict(tracks)
        self.last_seq = last_seq

    @classmethod
    def fresh(cls, cadence: Cadence) -> SessionLog:
        return cls(cadence, {k: Track(k) for k in KINDS}, 0)

    @classmethod
    def restore(
        cls, cadence: Cadence, latest: Mapping[SummaryType, Stored], messages: Sequence[Turn]
    ) -> SessionLog:
        """The state after ``messages`` (ordered by seq), given each type's newest summary."""
        tracks: dict[SummaryType, Track] = {}
        last = 0
        for kind in KINDS:
            stored = latest.get(kind)
            since = stored.message_seq if stored else 0
            tracks[kind] = Track(
                kind,
                previous=stored.content if stored else None,
                covered=stored.messages_covered if stored else 0,
                pending=[m for m in messages if m.seq > since] if cadence.enabled else [],
            )
            last = max(last, since)
        if messages:
            last = max(last, messages[-1].seq)
        return cls(cadence, tracks, last)

    def seen(self, seq: int) -> bool:
        """Whether the message at ``seq`` was already counted (a redelivery)."""
        return seq <= self.last_seq

    def due(self, turn: Turn) -> list[Job]:
        """The summaries ``turn`` completes; the state is unchanged until ``accept``."""
        if not self.cadence.enabled:
            return []
        jobs = []
        for kind in KINDS:
            track = self.tracks[kind]
            if len(track.pending) + 1 >= self.cadence.every(kind):
                turns = (*track.pending, turn)
                jobs.append(Job(kind, track.previous, turns, track.covered + len(turns)))
        return jobs

    def accept(self, turn: Turn, written: Mapping[SummaryType, str | None]) -> None:
        """Count ``turn``; each type in ``written`` was summarized up to it (None: parked).

        A parked summary still closes its window, so one bad answer does not make every later
        message due again; the previous summary stays as it was.
        """
        self.last_seq = turn.seq
        for kind in KINDS:
            track = self.tracks[kind]
            if kind in written:
                content = written[kind]
                track.covered += len(track.pending) + 1
                track.pending = []
                if content is not None:
                    track.previous = content
            elif self.cadence.enabled:
                track.pending.append(turn)

    def pending(self, kinds: Collection[SummaryType] = KINDS) -> int:
        """Messages waiting for the next summary of the longest-waiting type in ``kinds``."""
        return max(len(self.tracks[k].pending) for k in kinds)
