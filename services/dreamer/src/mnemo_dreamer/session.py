"""One dream's edits: every tool a specialist calls lands here, checked, then published.

Edits are published as they are made, so a dream that crashes keeps what it already emitted;
ids derive from the representation and the content, so the retried dream re-emits the same
events and the log's de-duplication (and the projection's idempotency) drop them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemo_dreamer.domain import MIN_PATTERN_SOURCES, PATTERN_TYPES, check_card, pattern_confidence
from mnemo_dreamer.ports import Memory, Observation, Publisher
from mnemo_runtime.vectors.ports import Scope
from mnemo_schema.envelope import Envelope
from mnemo_schema.grounding import content_key
from mnemo_schema.ids import derived_event_id, derived_id
from mnemo_schema.observations import ObservationDeleted, ObservationWritten, PeerCardUpdated


class ToolError(Exception):
    """A refused edit; its message goes back to the specialist as a tool error to correct."""


def render(o: Observation) -> str:
    """One observation as the specialists read it: ``[id] (level, date) content [cites: ..]``."""
    line = f"[{o.id}] ({o.level}, {o.created_at.date().isoformat()}) {o.content}"
    if o.premise_ids:
        line += f" [cites: {', '.join(o.premise_ids)}]"
    if o.needs_review:
        line += " [needs review]"
    return line


@dataclass
class Tally:
    deductive: int = 0
    inductive: int = 0
    contradictions: int = 0
    deleted: int = 0
    card_updated: bool = False
    rejected: int = 0


@dataclass
class DreamSession:
    """The edits of one dream over one representation."""

    scope: Scope
    due_event_id: str
    memory: Memory
    publisher: Publisher
    tally: Tally = field(default_factory=Tally)
    last_seq: int = 0
    # Written this dream and perhaps not projected yet: they count as existing for citations.
    written: list[ObservationWritten] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)

    async def observations(self, ids: Sequence[str]) -> list[Observation]:
        """Live observations by id, including this dream's own writes."""
        found = {o.id: o for o in await self.memory.get(self.scope, ids)}
        for e in self.written:
            if e.observation_id in ids:
                found[e.observation_id] = _from_event(e)
        return [found[i] for i in ids if i in found and i not in self.deleted]

    async def write(
        self,
        level: str,
        content: str,
        premise_ids: Sequence[str],
        *,
        confidence: float | None = None,
        pattern_type: str | None = None,
    ) -> ObservationWritten:
        """Write a derived observation, or raise ToolError with the store's reason."""
        premises = list(dict.fromkeys(premise_ids))
        gone = [p for p in premises if p in self.deleted]
        if gone:
            raise ToolError(f"cited observations {gone} were deleted in this dream")
        s = self.scope
        oid = derived_id("dream", s.workspace, s.observer, s.observed, level, content_key(content))
        event = ObservationWritten(
            event_id=derived_event_id("dream-write", s.workspace, oid),
            workspace=s.workspace,
            observation_id=oid,
            observer=s.observer,
            observed=s.observed,
            level=level,
            content=content,
            premise_ids=premises,
            confidence=confidence,
            pattern_type=pattern_type,
            origin="dreamer",
            causation_id=self.due_event_id,
        )
        verdicts = await self.memory.check([*self.written, event])
        if verdicts[-1] is not None:
            self.tally.rejected += 1
            raise ToolError(str(verdicts[-1]))
        await self._publish([event])
        self.written.append(event)
        return event

    async def delete(self, observation_id: str, reason: str) -> None:
        """Remove an observation from the representation (the log keeps it)."""
        if not (await self.observations([observation_id])):
            self.tally.rejected += 1
            raise ToolError(f"no live observation {observation_id!r} in this representation")
        s = self.scope
        await self._publish(
            [
                ObservationDeleted(
                    event_id=derived_event_id("dream-delete", s.workspace, observation_id),
                    workspace=s.workspace,
                    observation_id=observation_id,
                    observer=s.observer,
                    observed=s.observed,
                    reason=reason or "superseded",
                    causation_id=self.due_event_id,
                )
            ]
        )
        self.deleted.add(observation_id)
        self.tally.deleted += 1

    async def deduce(self, content: str, premise_ids: Sequence[str]) -> str:
        event = await self.write("deductive", content, premise_ids)
        self.tally.deductive += 1
        return f"written {event.observation_id}"

    async def update(
        self, content: str, premise_ids: Sequence[str], superseded: Sequence[str], reason: str
    ) -> str:
        """A knowledge update: the new value, citing the old, then the old one deleted."""
        missing = [o for o in superseded if o not in premise_ids]
        if missing:
            raise ToolError(f"the update must cite the superseded observations {missing}")
        event = await self.write("deductive", content, premise_ids)
        self.tally.deductive += 1
        for old in superseded:
            await self.delete(old, reason or f"superseded by {event.observation_id}")
        return f"written {event.observation_id}; deleted {', '.join(superseded)}"

    async def contradiction(self, content: str, observation_ids: Sequence[str]) -> str:
        if len(set(observation_ids)) < 2:
            raise ToolError("a contradiction cites both conflicting observations")
        event = await self.write("contradiction", content, observation_ids)
        self.tally.contradictions += 1
        return f"written {event.observation_id}"

    async def prune(self, observation_id: str, reason: str) -> str:
        """Drop a stale derived belief; explicit facts leave only through a knowledge update."""
        found = await self.observations([observation_id])
        if found and found[0].level == "explicit":
            raise ToolError("prune removes derived beliefs; use update_knowledge for a fact")
        await self.delete(observation_id, reason)
        return f"deleted {observation_id}"

    async def pattern(self, content: str, pattern_type: str, premise_ids: Sequence[str]) -> str:
        """An inductive pattern; its confidence is graded here from its live supporting sources."""
        if pattern_type not in PATTERN_TYPES:
            raise ToolError(f"pattern_type must be one of {sorted(PATTERN_TYPES)}")
        support = [
            o
            for o in await self.observations(list(dict.fromkeys(premise_ids)))
            if o.level in ("explicit", "deductive")
        ]
        if len(support) < MIN_PATTERN_SOURCES:
            self.tally.rejected += 1
            raise ToolError(
                f"a pattern needs at least {MIN_PATTERN_SOURCES} supporting explicit or"
                f" deductive observations; {len(support)} found among {list(premise_ids)}"
            )
        confidence = pattern_confidence(len(support))
        event = await self.write(
            "inductive",
            content,
            [o.id for o in support],
            confidence=confidence,
            pattern_type=pattern_type,
        )
        self.tally.inductive += 1
        return f"written {event.observation_id} (confidence {confidence})"

    async def set_card(self, entries: list[dict[str, str]]) -> str:
        lines = check_card(entries)
        if isinstance(lines, str):
            self.tally.rejected += 1
            raise ToolError(lines)
        s = self.scope
        await self._publish(
            [
                PeerCardUpdated(
                    event_id=derived_event_id("dream-card", s.workspace, self.due_event_id, *lines),
                    workspace=s.workspace,
                    observer=s.observer,
                    observed=s.observed,
                    card=lines,
                    origin="dreamer",
                    causation_id=self.due_event_id,
                )
            ]
        )
        self.tally.card_updated = True
        return f"card set ({len(lines)} entries)"

    async def _publish(self, events: Sequence[Envelope]) -> None:
        seqs = await self.publisher.publish(events)
        self.last_seq = max([self.last_seq, *seqs])


def _from_event(e: ObservationWritten) -> Observation:
    return Observation(
        id=e.observation_id,
        level=e.level,
        content=e.content,
        created_at=e.occurred_at,
        premise_ids=tuple(e.premise_ids),
        confidence=e.confidence,
        pattern_type=e.pattern_type,
    )
