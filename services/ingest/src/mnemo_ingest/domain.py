"""Pure decisions: a command plus the write model gives events, or a refusal. No I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemo_ingest.model import Member, SessionState, WorkspaceModel
from mnemo_ingest.ports import SessionCopy
from mnemo_schema import commands as c
from mnemo_schema.config import (
    PeerConfig,
    SessionConfiguration,
    SessionPeerConfig,
    WorkspaceConfiguration,
    effective,
    instructions,
    reasoning_enabled,
)
from mnemo_schema.errors import Refusal
from mnemo_schema.events import (
    Envelope,
    MessageDeleted,
    MessageMetadataUpdated,
    MessagePosted,
    PeerCreated,
    PeerDeleted,
    PeerJoinedSession,
    PeerLeftSession,
    PeerUpdated,
    Representation,
    ScopeCreated,
    ScopeSessionRemoved,
    ScopeSessionsAdded,
    SessionCreated,
    SessionDeleted,
    SessionPeerConfigured,
    SessionUpdated,
    WorkspaceCreated,
    WorkspaceDeleted,
    WorkspaceUpdated,
)
from mnemo_schema.files import FileChunk
from mnemo_schema.ids import derived_event_id, derived_id, new_event_id, new_message_id
from mnemo_schema.observations import ObservationDeleted, ObservationWritten, PeerCardUpdated
from mnemo_schema.webhooks import (
    MAX_ENDPOINTS_PER_WORKSPACE,
    WebhookEndpointDeleted,
    WebhookEndpointRegistered,
)


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


class _Builder:
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
        self.model.apply(event)  # type: ignore[arg-type]
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


def _need_workspace(model: WorkspaceModel, ctx: Context) -> None:
    if not model.exists:
        raise Refusal(404, f"workspace {ctx.workspace!r} not found", "workspace_id")


def _need_scope(model: WorkspaceModel, scope_id: str) -> set[str]:
    members = model.scopes.get(scope_id)
    if members is None:
        raise Refusal(404, f"scope {scope_id!r} not found", "scope_id")
    return members


def _need_session(model: WorkspaceModel, session_id: str) -> SessionState:
    session = model.sessions.get(session_id)
    if session is None:
        raise Refusal(404, f"session {session_id!r} not found", "session_id")
    return session


def decide(
    model: WorkspaceModel,
    cmd: c.Command,
    ctx: Context,
    token_counts: list[int] | None = None,
    copy: SessionCopy | None = None,
) -> Decision:
    """Events that carry out ``cmd`` on ``model`` (which is updated as a scratch copy).

    ``copy``: for a clone, the source session as the read side holds it.
    """
    b = _Builder(model, ctx)
    # An update of a workspace that does not exist creates it with what the update sets, as the
    # reference server does: the SDK's ``set_metadata`` on a fresh client sends only the update.
    if isinstance(cmd, c.EnsureWorkspace | c.UpdateWorkspace) and not model.exists:
        b.emit(
            WorkspaceCreated,
            metadata=cmd.metadata or {},
            configuration=cmd.configuration or WorkspaceConfiguration(),
        )
        b.decision.created = True
        return b.decision
    if isinstance(cmd, c.EnsureWorkspace):
        return b.decision
    if isinstance(cmd, c.DeleteWorkspace) and not model.exists and model.deleted:
        return b.decision  # erased already: deleting it again changes nothing
    _need_workspace(model, ctx)
    match cmd:
        case c.UpdateWorkspace():
            b.emit(WorkspaceUpdated, metadata=cmd.metadata, configuration=cmd.configuration)
        case c.DeleteWorkspace():
            b.emit(WorkspaceDeleted)
        case c.RegisterWebhookEndpoint():
            _register_webhook(b, cmd)
        case c.DeleteWebhookEndpoint():
            if cmd.endpoint_id not in model.webhooks.values():
                raise Refusal(404, f"webhook endpoint {cmd.endpoint_id!r} not found", "endpoint_id")
            b.emit(WebhookEndpointDeleted, endpoint_id=cmd.endpoint_id)
        case c.EnsurePeer():
            if cmd.peer_id not in model.peers:
                b.emit(
                    PeerCreated,
                    peer_id=cmd.peer_id,
                    metadata=cmd.metadata or {},
                    configuration=cmd.configuration or PeerConfig(),
                )
                b.decision.created = True
        case c.UpdatePeer():
            if cmd.peer_id not in model.peers:
                raise Refusal(404, f"peer {cmd.peer_id!r} not found", "peer_id")
            b.emit(
                PeerUpdated,
                peer_id=cmd.peer_id,
                metadata=cmd.metadata,
                configuration=cmd.configuration,
            )
        case c.EnsureSession():
            if cmd.session_id not in model.sessions:
                b.emit(
                    SessionCreated,
                    session_id=cmd.session_id,
                    metadata=cmd.metadata or {},
                    configuration=cmd.configuration or WorkspaceConfiguration(),
                )
                b.decision.created = True
            for pid, cfg in (cmd.peers or {}).items():
                b.join(cmd.session_id, pid, cfg)
            for scope in dict.fromkeys(cmd.scopes or ()):
                b.ensure_scope(scope, {})
                if cmd.session_id not in model.scopes[scope]:
                    b.emit(ScopeSessionsAdded, scope_id=scope, session_ids=[cmd.session_id])
        case c.EnsureScope():
            b.decision.created = b.ensure_scope(cmd.scope_id, cmd.metadata or {})
        case c.AddScopeSessions():
            members = _need_scope(model, cmd.scope_id)
            for i, sid in enumerate(cmd.session_ids):
                if sid not in model.sessions:
                    raise Refusal(404, f"session {sid!r} not found", f"session_ids.{i}")
            new = [s for s in dict.fromkeys(cmd.session_ids) if s not in members]
            if new:
                b.emit(ScopeSessionsAdded, scope_id=cmd.scope_id, session_ids=new)
        case c.RemoveScopeSession():
            members = _need_scope(model, cmd.scope_id)
            if cmd.session_id not in members:
                raise Refusal(
                    404,
                    f"session {cmd.session_id!r} is not in scope {cmd.scope_id!r}",
                    "session_id",
                )
            b.emit(ScopeSessionRemoved, scope_id=cmd.scope_id, session_id=cmd.session_id)
        case c.UpdateSession():
            _need_session(model, cmd.session_id)
            b.emit(
                SessionUpdated,
                session_id=cmd.session_id,
                metadata=cmd.metadata,
                configuration=cmd.configuration,
            )
        case c.DeleteSession():
            if cmd.session_id in model.deleted_sessions:
                return b.decision
            _need_session(model, cmd.session_id)
            b.emit(SessionDeleted, session_id=cmd.session_id)
        case c.DeletePeer():
            if cmd.peer_id in model.deleted_peers:
                return b.decision
            if cmd.peer_id not in model.peers:
                raise Refusal(404, f"peer {cmd.peer_id!r} not found", "peer_id")
            b.emit(PeerDeleted, peer_id=cmd.peer_id)
        case c.DeleteMessage():
            # That the message exists in the session was checked against the read model.
            if cmd.message_id not in model.deleted_messages:
                _need_session(model, cmd.session_id)
                b.emit(MessageDeleted, session_id=cmd.session_id, message_id=cmd.message_id)
        case c.AddSessionPeers():
            session = _need_session(model, cmd.session_id)
            if cmd.replace:
                for pid in sorted(set(session.members) - set(cmd.peers)):
                    b.emit(PeerLeftSession, session_id=cmd.session_id, peer_id=pid)
            for pid, cfg in cmd.peers.items():
                b.join(cmd.session_id, pid, cfg)
        case c.RemoveSessionPeers():
            session = _need_session(model, cmd.session_id)
            for pid in dict.fromkeys(cmd.peer_ids):
                if pid in session.members:
                    b.emit(PeerLeftSession, session_id=cmd.session_id, peer_id=pid)
        case c.ConfigureSessionPeer():
            session = _need_session(model, cmd.session_id)
            if cmd.peer_id not in session.members:
                raise Refusal(
                    404,
                    f"peer {cmd.peer_id!r} is not a member of session {cmd.session_id!r}",
                    "peer_id",
                )
            b.join(
                cmd.session_id,
                cmd.peer_id,
                SessionPeerConfig(observe_me=cmd.observe_me, observe_others=cmd.observe_others),
            )
        case c.PostMessages():
            _post_messages(b, cmd, token_counts)
        case c.CloneSession():
            _clone_session(b, cmd, copy)
        case c.CreateConclusions():
            _create_conclusions(b, cmd)
        case c.SetPeerCard():
            for key, peer in (("observer_id", cmd.observer_id), ("observed_id", cmd.observed_id)):
                if peer not in model.peers:
                    raise Refusal(404, f"peer {peer!r} not found", key)
            b.emit(
                PeerCardUpdated,
                observer=cmd.observer_id,
                observed=cmd.observed_id,
                card=cmd.card,
                origin="api",
            )
        case c.DeleteConclusion():
            b.emit(
                ObservationDeleted,
                observation_id=cmd.conclusion_id,
                observer=cmd.observer_id,
                observed=cmd.observed_id,
                reason=cmd.reason,
            )
        case c.UpdateMessageMetadata():
            _need_session(model, cmd.session_id)
            b.emit(
                MessageMetadataUpdated,
                session_id=cmd.session_id,
                message_id=cmd.message_id,
                metadata=cmd.metadata,
            )
    return b.decision


def _register_webhook(b: _Builder, cmd: c.RegisterWebhookEndpoint) -> None:
    if cmd.url in b.model.webhooks:
        return
    if len(b.model.webhooks) >= MAX_ENDPOINTS_PER_WORKSPACE:
        raise Refusal(
            409,
            f"url: the workspace has the most webhook endpoints it may have"
            f" ({MAX_ENDPOINTS_PER_WORKSPACE}); delete one first",
            "url",
        )
    b.emit(WebhookEndpointRegistered, endpoint_id=new_event_id(), url=cmd.url)
    b.decision.created = True


def _create_conclusions(b: _Builder, cmd: c.CreateConclusions) -> None:
    for i, item in enumerate(cmd.conclusions):
        for key, peer in (("observer_id", item.observer_id), ("observed_id", item.observed_id)):
            if peer not in b.model.peers:
                raise Refusal(404, f"peer {peer!r} not found", f"conclusions.{i}.{key}")
        if item.session_id is not None and item.session_id not in b.model.sessions:
            raise Refusal(
                404, f"session {item.session_id!r} not found", f"conclusions.{i}.session_id"
            )
    for item in cmd.conclusions:
        oid = new_message_id()
        b.emit(
            ObservationWritten,
            observation_id=oid,
            observer=item.observer_id,
            observed=item.observed_id,
            session_id=item.session_id,
            level="explicit",
            content=item.content,
            origin="api",
        )
        b.decision.observation_ids.append(oid)


def _post_messages(b: _Builder, cmd: c.PostMessages, token_counts: list[int] | None) -> None:
    session = _need_session(b.model, cmd.session_id)
    b.decision.posted_at = b.ctx.now
    counts = token_counts or [0] * len(cmd.messages)
    if len(counts) != len(cmd.messages):
        raise ValueError("one token count per message is required")
    # The configuration in force, resolved once per batch (a message may override reasoning).
    base = effective(b.model.configuration, session.configuration)
    base_instructions = instructions(base, "deriver")
    for i, msg in enumerate(cmd.messages):
        b.join(cmd.session_id, msg.peer_id, SessionPeerConfig())
        # With an idempotency key, a retried batch gets the same message and event ids, so the
        # log's duplicate window and the projections' keys both drop the repeat.
        key = cmd.idempotency_key
        message_id = (
            derived_id(b.ctx.workspace, cmd.session_id, key, str(i)) if key else new_message_id()
        )
        cfg = base if msg.configuration is None else effective(base, msg.configuration)
        b.emit(
            MessagePosted,
            event_id=derived_event_id(b.ctx.workspace, "msg", message_id) if key else None,
            session_id=cmd.session_id,
            message_id=message_id,
            peer_id=msg.peer_id,
            content=msg.content,
            metadata=msg.metadata or {},
            created_at=msg.created_at or b.ctx.now,
            token_count=counts[i],
            representations=representations(b.model, session, msg.peer_id),
            reasoning=reasoning_enabled(cfg),
            instructions=base_instructions if cfg is base else instructions(cfg, "deriver"),
            file=None
            if cmd.file is None
            else FileChunk(**cmd.file.model_dump(), chunk_index=i, total_chunks=len(cmd.messages)),
        )
        b.decision.message_ids.append(message_id)


def _clone_session(b: _Builder, cmd: c.CloneSession, copy: SessionCopy | None) -> None:
    source = _need_session(b.model, cmd.session_id)
    if copy is None:
        raise ValueError("a clone needs its source session's copy")
    clone_id = cmd.clone_id or new_message_id()
    if clone_id in b.model.sessions:
        raise Refusal(409, f"session {clone_id!r} already exists", "clone_id")
    messages = copy.messages
    if cmd.message_id is not None:
        ids = [m.message_id for m in messages]
        if cmd.message_id not in ids:
            raise Refusal(
                404,
                f"message {cmd.message_id!r} not found in session {cmd.session_id!r}",
                "message_id",
            )
        messages = messages[: ids.index(cmd.message_id) + 1]
    b.emit(
        SessionCreated,
        session_id=clone_id,
        metadata=copy.metadata,
        configuration=SessionConfiguration.model_validate(copy.configuration),
    )
    for pid, member in sorted(source.members.items()):
        b.join(clone_id, pid, SessionPeerConfig(**vars(member)))
    for m in messages:
        message_id = new_message_id()
        b.emit(
            MessagePosted,
            session_id=clone_id,
            message_id=message_id,
            peer_id=m.peer_id,
            content=m.content,
            metadata=m.metadata,
            created_at=m.created_at,
            token_count=m.token_count,
            # What the originals said is in memory already; copies would only repeat it.
            representations=[],
            cloned_from=m.message_id,
        )
        b.decision.message_ids.append(message_id)
    b.decision.created = True
    b.decision.session_id = clone_id
