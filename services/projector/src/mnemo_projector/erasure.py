"""What an erasure covers in the log: pure decisions over the events it reads back.

A deletion event (of a message, session, peer or workspace) covers every earlier event that
holds its content or what was derived from it:

- the messages themselves and their metadata updates; for a session, peer or workspace also
  the entity events that describe it (creation, updates with their metadata, memberships);
- the summaries covering an erased message (each summary is merged from the one before it, so
  every summary of that session from the first erased message on);
- observations citing an erased message, or formed in an erased session, and, through the
  provenance DAG, every derived observation resting on an erased one (a derived sentence may
  restate any of its premises, so one erased premise is enough); their deletions (whose reasons
  may quote them); for a peer or a workspace every event of their representations;
- a card the dreamer drew in a representation that lost observations (its entries carry no
  provenance, so it goes whole; a card set through the API came from the caller and stays);
- the stages' progress in what it deletes (a peer's representations' lines, a session's
  summarizer count) and a peer's dreams: positions and ids only, but named by the peer's or
  session's id. Landing after the erasure (work in flight), they go too, and so do a card and
  an observation of the peer's representations (see ``late``).

Events holding text are erased securely (their bytes overwritten); the others (memberships,
dream bookkeeping, progress) are only removed. The deletion event itself stays: it holds ids
only, and a replay applies it to nothing. Decoding failures on the erased entity's subjects are erased too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ValidationError

from mnemo_runtime.streams import Stored
from mnemo_schema import subjects
from mnemo_schema.dreams import DreamCompleted, DreamDue, DreamsErased
from mnemo_schema.events import (
    Event,
    MessageDeleted,
    MessageMetadataUpdated,
    MessagePosted,
    PeerCreated,
    PeerDeleted,
    PeerJoinedSession,
    PeerLeftSession,
    PeerUpdated,
    SessionCreated,
    SessionDeleted,
    SessionPeerConfigured,
    SessionUpdated,
    WorkspaceDeleted,
    decode_event,
)
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationsErased,
    ObservationWritten,
    PeerCardUpdated,
)
from mnemo_schema.progress import DerivationProgressed, SummarizationProgressed
from mnemo_schema.summaries import SummariesErased, SummaryUpdated

Kind = Literal["message", "session", "peer", "workspace"]
Deletion = MessageDeleted | SessionDeleted | PeerDeleted | WorkspaceDeleted
Rep = tuple[str, str]
# Events without text of the user's: removed, not overwritten (which costs a file sync each).
_CONTENT_FREE = (
    PeerJoinedSession,
    PeerLeftSession,
    SessionPeerConfigured,
    DreamCompleted,
    ObservationsErased,
    SummariesErased,
    MessageDeleted,
    SessionDeleted,
    PeerDeleted,
    DerivationProgressed,
    SummarizationProgressed,
    DreamsErased,
)


@dataclass(frozen=True)
class Target:
    """What one deletion event erases, and where it stands in the log."""

    kind: Kind
    workspace: str
    seq: int
    event_id: str
    session_id: str | None = None
    peer_id: str | None = None
    message_id: str | None = None

    @classmethod
    def of(cls, seq: int, e: Deletion) -> Target:
        """The target of a deletion event at ``seq``."""
        ws, seq, eid = e.workspace, seq, e.event_id
        if isinstance(e, MessageDeleted):
            return cls("message", ws, seq, eid, session_id=e.session_id, message_id=e.message_id)
        if isinstance(e, SessionDeleted):
            return cls("session", ws, seq, eid, session_id=e.session_id)
        if isinstance(e, PeerDeleted):
            return cls("peer", ws, seq, eid, peer_id=e.peer_id)
        return cls("workspace", ws, seq, eid)

    def takes_whole(self, rep: Rep) -> bool:
        """Whether the erasure takes representation ``rep`` itself (its peer's or workspace's),
        not only some of its observations."""
        return self.kind == "workspace" or (self.kind == "peer" and self.peer_id in rep)

    @property
    def name(self) -> str:
        """The erased entity's id."""
        return self.message_id or self.session_id or self.peer_id or self.workspace

    def filters(self) -> list[str]:
        """The stored subjects holding what the erasure may cover (read back up to ``seq``):
        those of the workspace, in whichever partition it is."""
        if self.kind == "workspace":
            return [subjects.workspace_filter(self.workspace)]
        ws = f"mnemo.evt.{self.workspace}.*"
        if self.kind == "peer":
            return [
                f"{ws}.msg.*",
                f"{ws}.sum.*",
                f"{ws}.ent.>",
                f"{ws}.obs.>",
                f"{ws}.dream.>",
                f"{ws}.work.deriver.>",
            ]
        sid = self.session_id
        return [
            f"{ws}.msg.{sid}",
            f"{ws}.sum.{sid}",
            f"{ws}.ent.>",
            f"{ws}.obs.>",
            f"{ws}.work.summarizer.{sid}",
        ]


@dataclass
class Plan:
    """The events to erase and what they held, for the projections and the tombstones."""

    secure: set[int] = field(default_factory=set)
    plain: set[int] = field(default_factory=set)
    messages: set[str] = field(default_factory=set)
    observations: dict[Rep, set[str]] = field(default_factory=dict)
    cards: set[Rep] = field(default_factory=set)
    # The erased messages' own events, erased last: until they go, a run started again finds
    # everything that rests on them (summaries carry positions, not ids).
    posted: set[int] = field(default_factory=set)
    # Every observation event read back, by id (survivors of an erased duplicate are re-stated).
    written: dict[str, Stored] = field(default_factory=dict)
    # The positions of the erased summaries' events, by session (the memory projection drops
    # their rows).
    summaries: dict[str, set[int]] = field(default_factory=dict)

    @property
    def erased_observations(self) -> set[str]:
        """Every erased observation id, whatever its representation."""
        return set().union(*self.observations.values()) if self.observations else set()

    def erase(self, s: Stored, e: Event | None) -> None:
        (self.secure if e is None or holds_text(e) else self.plain).add(s.seq)


def decoded(s: Stored) -> Event | None:
    """The event ``s`` holds; None if it does not decode (as on a mangled subject)."""
    try:
        return decode_event(s.data)
    except ValidationError:
        return None


def _ours(t: Target, subject: str) -> bool:
    """Whether an undecodable event sits on a subject that belongs to the erased entity."""
    parts = subject.split(".")
    if subjects.partition_of_subject(subject) is not None:
        del parts[3]  # the stored form: the partition follows the workspace
    if t.kind == "workspace":
        return True
    if t.kind == "session":
        if parts[3:5] == ["work", "summarizer"]:
            return len(parts) > 5 and parts[5] == t.session_id
        return len(parts) > 4 and parts[3] in ("msg", "sum") and parts[4] == t.session_id
    if t.kind == "peer":
        if parts[3:5] == ["work", "deriver"]:
            return t.peer_id in parts[5:7]
        return len(parts) > 5 and parts[3] in ("obs", "dream") and t.peer_id in parts[4:6]
    return False


def plan(t: Target, stored: Iterable[Stored], already: Iterable[str] = ()) -> Plan:
    """What erasing ``t`` covers among ``stored`` (the events on ``t.filters()`` before it).

    ``already``: message and observation ids an earlier, interrupted run of this erasure
    erased, so that what rests on them is still found once their own events are gone.
    """
    p = Plan()
    seen = sorted({s.seq: s for s in stored if s.seq < t.seq}.values(), key=lambda s: s.seq)
    events = [(s, decoded(s)) for s in seen]
    gone = set(already)
    p.messages |= gone
    first_in: dict[str, int] = {}  # session -> position of its first erased message
    for s, e in events:
        if e is None:
            if _ours(t, s.subject):
                p.secure.add(s.seq)
            continue
        if _entity_covered(t, e, p.messages):
            p.erase(s, e)
        if isinstance(e, MessagePosted) and s.seq in p.secure:
            p.messages.add(e.message_id)
            p.posted.add(s.seq)
            first_in.setdefault(e.session_id, s.seq)
    for s, e in events:
        if isinstance(e, SummaryUpdated) and (
            _summary_covered(t, e, first_in) or e.message_id in p.messages
        ):
            p.erase(s, e)
            p.summaries.setdefault(e.session_id, set()).add(s.seq)
    _observations(t, events, p, gone)
    return p


def _entity_covered(t: Target, e: Event, erased_messages: set[str]) -> bool:
    if isinstance(e, WorkspaceDeleted | SessionDeleted | PeerDeleted | MessageDeleted):
        return False  # earlier deletions stay: ids only, and a replay needs them
    if t.kind == "workspace":
        return not isinstance(e, ObservationWritten | ObservationDeleted | PeerCardUpdated)
    if isinstance(e, MessagePosted):
        return (
            (t.kind == "message" and e.message_id == t.message_id)
            or (t.kind == "session" and e.session_id == t.session_id)
            or (t.kind == "peer" and e.peer_id == t.peer_id)
        )
    if isinstance(e, MessageMetadataUpdated):
        return e.message_id in erased_messages
    if t.kind == "session":
        return (
            isinstance(
                e,
                SessionCreated
                | SessionUpdated
                | PeerJoinedSession
                | PeerLeftSession
                | SessionPeerConfigured
                | SummarizationProgressed,
            )
            and e.session_id == t.session_id
        )
    if t.kind == "peer":
        if isinstance(e, PeerCreated | PeerUpdated | PeerJoinedSession | PeerLeftSession):
            return e.peer_id == t.peer_id
        if isinstance(e, SessionPeerConfigured):
            return e.peer_id == t.peer_id
        if isinstance(e, DreamDue | DreamCompleted | DerivationProgressed):
            return t.peer_id in (e.observer, e.observed)
    return False


def _summary_covered(t: Target, e: SummaryUpdated, first_in: dict[str, int]) -> bool:
    if t.kind in ("workspace", "session"):
        return t.kind == "workspace" or e.session_id == t.session_id
    first = first_in.get(e.session_id)
    return first is not None and e.message_seq >= first


def _observations(
    t: Target, events: list[tuple[Stored, Event | None]], p: Plan, gone: set[str]
) -> None:
    """Observations covered, in log order (premises come before what rests on them)."""
    erased: set[str] = set(gone)
    touched: set[Rep] = set()
    for s, e in events:
        if isinstance(e, ObservationWritten):
            p.written[e.observation_id] = s
            rep = (e.observer, e.observed)
            covered = (
                t.kind == "workspace"
                or (t.kind == "peer" and t.peer_id in rep)
                or (t.kind == "session" and e.session_id == t.session_id)
                or any(m in p.messages for m in e.source_message_ids)
                or any(o in erased for o in e.premise_ids)
                or e.observation_id in gone
            )
            if covered:
                erased.add(e.observation_id)
                p.observations.setdefault(rep, set()).add(e.observation_id)
                p.secure.add(s.seq)
                touched.add(rep)
        elif isinstance(e, ObservationDeleted) and (
            e.observation_id in erased
            or (t.kind == "peer" and t.peer_id in (e.observer, e.observed))
        ):
            p.secure.add(s.seq)
        elif isinstance(e, ObservationsErased) and (
            t.kind == "workspace" or (t.kind == "peer" and t.peer_id in (e.observer, e.observed))
        ):
            p.plain.add(s.seq)
    for s, e in events:
        if not isinstance(e, PeerCardUpdated):
            continue
        rep = (e.observer, e.observed)
        whole = t.kind == "workspace" or (t.kind == "peer" and t.peer_id in rep)
        if whole or (e.origin == "dreamer" and rep in touched):
            p.secure.add(s.seq)
            p.cards.add(rep)
            p.observations.setdefault(rep, set())
    if t.kind == "peer":
        for rep in touched:
            if t.peer_id in rep:
                p.cards.add(rep)


def holds_text(e: Event) -> bool:
    """Whether ``e`` may hold text of the user's: erased securely (overwritten), not removed."""
    return not isinstance(e, _CONTENT_FREE)
