"""Pure dreamer logic: when a dream is due, how confident a pattern is, what a card may hold."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal, get_args

from mnemo_dreamer.settings import DreamerSettings
from mnemo_schema.observations import MAX_CARD_ENTRIES, MAX_CARD_ENTRY_CHARS


@dataclass(frozen=True)
class Schedule:
    """The dream schedule of one representation, as kept in the ``dream_schedule`` table."""

    workspace: str
    observer: str
    observed: str
    explicit_count: int = 0
    explicit_at_last_dream: int = 0
    last_dream_at: datetime | None = None
    last_activity_at: datetime | None = None
    # When the pending dream may start; None when none is pending.
    due_at: datetime | None = None
    # The DreamDue published for the pending dream and not completed yet.
    due_event_id: str | None = None

    @property
    def new_observations(self) -> int:
        """Explicit observations since the last dream."""
        return self.explicit_count - self.explicit_at_last_dream


def on_explicit(s: Schedule, now: datetime, settings: DreamerSettings, new: int = 1) -> Schedule:
    """Count ``new`` explicit observations made by ``now``; (re)compute when the next dream may
    start.

    New activity postpones a pending dream by the idle delay, so a dream runs over a settled
    conversation rather than in the middle of one.
    """
    s = replace(s, explicit_count=s.explicit_count + new, last_activity_at=now)
    if s.new_observations < settings.min_new_observations:
        return s
    earliest = now + timedelta(seconds=settings.idle_s)
    if s.last_dream_at is not None:
        earliest = max(earliest, s.last_dream_at + timedelta(seconds=settings.min_interval_s))
    return replace(s, due_at=earliest)


def ready(s: Schedule, now: datetime) -> bool:
    """Whether a DreamDue should be published for ``s`` now."""
    return s.due_at is not None and s.due_event_id is None and s.due_at <= now


def on_completed(
    s: Schedule, now: datetime, explicit_seen: int, settings: DreamerSettings
) -> Schedule:
    """The dream over the first ``explicit_seen`` explicit observations finished."""
    s = replace(s, explicit_at_last_dream=explicit_seen, last_dream_at=now, due_event_id=None)
    if s.new_observations < settings.min_new_observations:
        return replace(s, due_at=None)
    # Enough arrived while it dreamt: the next dream waits out the interval.
    return replace(s, due_at=now + timedelta(seconds=settings.min_interval_s))


PatternType = Literal["preference", "behaviour", "personality", "tendency", "temporal_trend"]
PATTERN_TYPES: frozenset[str] = frozenset(get_args(PatternType))
MIN_PATTERN_SOURCES = 2


def pattern_confidence(sources: int) -> float:
    """Confidence of an inductive pattern, graded by how many observations support it."""
    if sources < MIN_PATTERN_SOURCES:
        raise ValueError(f"a pattern needs at least {MIN_PATTERN_SOURCES} supporting observations")
    if sources == 2:
        return 0.4
    return 0.6 if sources <= 4 else 0.8


CardKind = Literal["identity", "attribute", "relationship", "instruction"]
CARD_KINDS: frozenset[str] = frozenset(get_args(CardKind))


def check_card(entries: list[dict[str, str]]) -> list[str] | str:
    """The card's lines, or why it is refused (only stable kinds, within the card's bounds)."""
    if len(entries) > MAX_CARD_ENTRIES:
        return f"a peer card holds at most {MAX_CARD_ENTRIES} entries; got {len(entries)}"
    lines: list[str] = []
    for i, e in enumerate(entries):
        kind, text = e.get("kind", ""), (e.get("text") or "").strip()
        if kind not in CARD_KINDS:
            return (
                f"entry {i}: kind {kind!r} is not one of {sorted(CARD_KINDS)}; behaviour,"
                " transient state and inferred preferences belong in observations"
            )
        if not text or len(text) > MAX_CARD_ENTRY_CHARS:
            return f"entry {i}: text must be 1..{MAX_CARD_ENTRY_CHARS} characters"
        if text not in lines:
            lines.append(text)
    return lines
