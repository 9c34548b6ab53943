"""Late work: what an erasure covers among the events that land after it.

Work in flight when an erasure runs (a derivation, a summary, a dream of what was erased) lands
after it. What cites an erased message or observation is found by its citations (the eraser's
erased ids); what names an erased peer, session or workspace (``Named``) is found here: by the
newest erasure before it of what it names (``Recorded``), unless the log made that id again in
between (``made_again``). What the memory projection may already have applied of it is
retracted (``late_retraction``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mnemo_projector.erasure import Kind, decoded
from mnemo_runtime.streams import Stored
from mnemo_schema.dreams import DreamCompleted, DreamDue, DreamsErased
from mnemo_schema.events import Event, PeerCreated, SessionCreated, WorkspaceCreated
from mnemo_schema.observations import (
    ObservationDeleted,
    ObservationsErased,
    ObservationWritten,
    PeerCardUpdated,
)
from mnemo_schema.progress import DerivationProgressed, SummarizationProgressed

# Work in flight that names what it belongs to: progress a peer's representation line or a
# session, a dream's events, a card, an observation and its deletion (whose reason may quote
# it) a peer's representation. Landing after the erasure of what it names (the work was under
# way), it goes too.
Named = (
    DerivationProgressed
    | SummarizationProgressed
    | DreamDue
    | DreamCompleted
    | PeerCardUpdated
    | ObservationWritten
    | ObservationDeleted
)


def named_by(e: Named) -> tuple[Kind, list[str]]:
    """The kind of erasure that covers ``e`` landing after it, and the ids it names."""
    if isinstance(e, SummarizationProgressed):
        return "session", [e.session_id]
    return "peer", sorted({e.observer, e.observed})


def late_retraction(e: Named) -> Event | None:
    """What the memory projection must be told when late ``e`` is erased, having maybe applied
    it: an observation or a card goes from its tables (and the representation from the dream
    schedule, which counted it), a dream that was due from the queue (the dreamer skips the
    erased event, so no ``DreamCompleted`` would close it)."""
    eid = f"{e.event_id}.erased"
    if isinstance(e, ObservationWritten | PeerCardUpdated):
        return ObservationsErased(
            event_id=eid,
            workspace=e.workspace,
            observer=e.observer,
            observed=e.observed,
            observation_ids=[e.observation_id] if isinstance(e, ObservationWritten) else [],
            card=isinstance(e, PeerCardUpdated),
            whole=True,
        )
    if isinstance(e, DreamDue):
        return DreamsErased(
            event_id=eid,
            workspace=e.workspace,
            observer=e.observer,
            observed=e.observed,
            due_event_ids=[e.event_id],
        )
    return None


@dataclass
class Recorded:
    """The erasures of peers, sessions and workspaces recorded in some workspaces, as one step
    of the eraser knows them: which ``Named`` work landing later they cover is looked up here,
    not asked of the database for each event."""

    # (workspace, kind, target) -> the positions of its erasures, ascending.
    at: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)

    def add(self, workspace: str, kind: str, target: str, seq: int) -> None:
        """Record an erasure at ``seq`` (``target``: the erased id; a workspace's own for a
        workspace)."""
        seqs = self.at.setdefault((workspace, kind, target), [])
        if seq not in seqs:
            seqs.append(seq)
            seqs.sort()

    def last_before(self, e: Named, seq: int) -> int | None:
        """The newest erasure before ``seq`` that covers what ``e`` names, if any."""
        kind, names = named_by(e)
        keys = [(e.workspace, "workspace", e.workspace)]
        keys += [(e.workspace, kind, n) for n in names]
        found = [at for k in keys for at in self.at.get(k, ()) if at < seq]
        return max(found) if found else None


def made_again(kind: Kind, names: Iterable[str], events: Iterable[Stored]) -> bool:
    """Whether ``events`` (the workspace's entity events between an erasure and ``Named`` work
    that landed after it) create anew the workspace or one of ``names`` (a peer or a session):
    the work is then of the new one, and stays."""
    wanted = set(names)
    for s in events:
        e = decoded(s)
        if isinstance(e, WorkspaceCreated):
            return True
        if kind == "peer" and isinstance(e, PeerCreated) and e.peer_id in wanted:
            return True
        if kind == "session" and isinstance(e, SessionCreated) and e.session_id in wanted:
            return True
    return False
