"""What every decision is made of: its context, its result, the builder that accumulates events
on a scratch copy of the write model, and the lookups that refuse what does not exist."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemo_ingest.model import Member, SessionState, WorkspaceModel
from mnemo_schema.config import SessionPeerConfig
from mnemo_schema.errors import Refusal
from mnemo_schema.events import (
    Envelope,
    PeerCreated,
    PeerJoinedSession,
    Representation,
    ScopeCreated,
    SessionPeerConfigured,
)
from mnemo_schema.ids import new_event_id


@dataclass(frozen=True)
class Context:
    """What a decision needs from outside: the workspace, the clock, trace and correlation."""

    workspace: str
    now: datetime
    trace: dict[str, str] = field(default_factory=dict)
    correlation_id: str | None = None


@dataclass
class Decision:
    events: list[Envelope] = field(default_factory=list)
    created: bool = False
    message_ids: list[str] = field(default_factory=list)
    observation_ids: list[str] = field(default_factory=list)
    posted_at: datetime | None = None
    session_id: str | None = None


def representations(
    model: WorkspaceModel, session: SessionState, sender: str
) -> list[Representation]:
    """The (observer, observed) pairs a message from ``sender`` may feed, right now.

    A peer that opted out of being observed (peer-level or in this session) feeds nothing. Otherwise
    the sender's own model (sender, sender) takes it, and so does every other member that observes
    others in this session: each observer's model is formed only from what it witnessed.
    """
    if not model.peers.get(sender, True):
        return []
    me = session.members.get(sender, Member())
    if not me.observe_me:
        return []
    reps = [Representation(observer=sender, observed=sender)]
    for pid, member in sorted(session.members.items()):
        if pid != sender and member.observe_others:
            reps.append(Representation(observer=pid, observed=sender))
    return reps


class Builder:
    """Accumulates events while keeping a scratch copy of the model up to date."""

    def __init__(self, model: WorkspaceModel, ctx: Context) -> None:
        self.model = model
        self.ctx = ctx
        self.decision = Decision()

    def emit(self, make: type[Envelope], event_id: str | None = None, **fields: object) -> None:
        # Every field comes from a validated command or from here, so the event is built
        # without re-validation (it is validated again wherever it is decoded).
        values: dict[str, Any] = {
            "event_id": event_id or new_event_id(),
            "workspace": self.ctx.workspace,
            "occurred_at": self.ctx.now,
            "trace": self.ctx.trace,
            "correlation_id": self.ctx.correlation_id,
            **fields,
        }
        event = make.model_construct(**values)
        self.model.apply(event)
        self.decision.events.append(event)

    def ensure_peer(self, peer_id: str) -> None:
        if peer_id not in self.model.peers:
            self.emit(PeerCreated, peer_id=peer_id, metadata={})

    def ensure_scope(self, scope_id: str, metadata: dict[str, Any]) -> bool:
        """Create the scope if missing; whether it was created."""
        if scope_id in self.model.scopes:
            return False
        self.emit(ScopeCreated, scope_id=scope_id, metadata=metadata)
        return True

    def join(self, session_id: str, peer_id: str, cfg: SessionPeerConfig) -> None:
        self.ensure_peer(peer_id)
        members = self.model.sessions[session_id].members
        current = members.get(peer_id)
        if current is None:
            self.emit(
                PeerJoinedSession,
                session_id=session_id,
                peer_id=peer_id,
                observe_me=cfg.observe_me is not False,
                observe_others=cfg.observe_others is True,
            )
            return
        wanted = Member(
            current.observe_me if cfg.observe_me is None else cfg.observe_me,
            current.observe_others if cfg.observe_others is None else cfg.observe_others,
        )
        if wanted != current:
            self.emit(
                SessionPeerConfigured,
                session_id=session_id,
                peer_id=peer_id,
                observe_me=wanted.observe_me,
                observe_others=wanted.observe_others,
            )


def need_workspace(model: WorkspaceModel, ctx: Context) -> None:
    if not model.exists:
        raise Refusal(404, f"workspace {ctx.workspace!r} not found", "workspace_id")


def need_scope(model: WorkspaceModel, scope_id: str) -> set[str]:
    members = model.scopes.get(scope_id)
    if members is None:
        raise Refusal(404, f"scope {scope_id!r} not found", "scope_id")
    return members


def need_session(model: WorkspaceModel, session_id: str) -> SessionState:
    session = model.sessions.get(session_id)
    if session is None:
        raise Refusal(404, f"session {session_id!r} not found", "session_id")
    return session
