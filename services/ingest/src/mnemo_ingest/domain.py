"""Pure decisions: a command plus the write model gives events, or a refusal. No I/O.

``decide`` dispatches; the entities' decisions are here, a conversation's (messages, clones) in
``conversation``, and what the builder and the lookups are in ``decision``."""

from __future__ import annotations

from mnemo_ingest.conversation import clone_session, post_messages
from mnemo_ingest.decision import (
    Builder,
    Context,
    Decision,
    need_scope,
    need_session,
    need_workspace,
)
from mnemo_ingest.model import WorkspaceModel
from mnemo_ingest.ports import SessionCopy
from mnemo_schema import commands as c
from mnemo_schema.config import PeerConfig, SessionPeerConfig, WorkspaceConfiguration
from mnemo_schema.errors import Refusal
from mnemo_schema.events import (
    MessageDeleted,
    MessageMetadataUpdated,
    PeerCreated,
    PeerDeleted,
    PeerLeftSession,
    PeerUpdated,
    ScopeSessionRemoved,
    ScopeSessionsAdded,
    SessionCreated,
    SessionDeleted,
    SessionUpdated,
    WorkspaceCreated,
    WorkspaceDeleted,
    WorkspaceUpdated,
)
from mnemo_schema.ids import new_event_id, new_message_id
from mnemo_schema.observations import ObservationDeleted, ObservationWritten, PeerCardUpdated
from mnemo_schema.webhooks import (
    MAX_ENDPOINTS_PER_WORKSPACE,
    WebhookEndpointDeleted,
    WebhookEndpointRegistered,
)


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
    b = Builder(model, ctx)
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
    need_workspace(model, ctx)
    match cmd:
        case c.UpdateWorkspace():
            b.emit(WorkspaceUpdated, metadata=cmd.metadata, configuration=cmd.configuration)
        case c.DeleteWorkspace():
            b.emit(WorkspaceDeleted)
        case c.RegisterWebhookEndpoint():
            register_webhook(b, cmd)
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
            members = need_scope(model, cmd.scope_id)
            for i, sid in enumerate(cmd.session_ids):
                if sid not in model.sessions:
                    raise Refusal(404, f"session {sid!r} not found", f"session_ids.{i}")
            new = [s for s in dict.fromkeys(cmd.session_ids) if s not in members]
            if new:
                b.emit(ScopeSessionsAdded, scope_id=cmd.scope_id, session_ids=new)
        case c.RemoveScopeSession():
            members = need_scope(model, cmd.scope_id)
            if cmd.session_id not in members:
                raise Refusal(
                    404,
                    f"session {cmd.session_id!r} is not in scope {cmd.scope_id!r}",
                    "session_id",
                )
            b.emit(ScopeSessionRemoved, scope_id=cmd.scope_id, session_id=cmd.session_id)
        case c.UpdateSession():
            need_session(model, cmd.session_id)
            b.emit(
                SessionUpdated,
                session_id=cmd.session_id,
                metadata=cmd.metadata,
                configuration=cmd.configuration,
            )
        case c.DeleteSession():
            if cmd.session_id in model.deleted_sessions:
                return b.decision
            need_session(model, cmd.session_id)
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
                need_session(model, cmd.session_id)
                b.emit(MessageDeleted, session_id=cmd.session_id, message_id=cmd.message_id)
        case c.AddSessionPeers():
            session = need_session(model, cmd.session_id)
            if cmd.replace:
                for pid in sorted(set(session.members) - set(cmd.peers)):
                    b.emit(PeerLeftSession, session_id=cmd.session_id, peer_id=pid)
            for pid, cfg in cmd.peers.items():
                b.join(cmd.session_id, pid, cfg)
        case c.RemoveSessionPeers():
            session = need_session(model, cmd.session_id)
            for pid in dict.fromkeys(cmd.peer_ids):
                if pid in session.members:
                    b.emit(PeerLeftSession, session_id=cmd.session_id, peer_id=pid)
        case c.ConfigureSessionPeer():
            session = need_session(model, cmd.session_id)
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
            post_messages(b, cmd, token_counts)
        case c.CloneSession():
            clone_session(b, cmd, copy)
        case c.CreateConclusions():
            create_conclusions(b, cmd)
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
            need_session(model, cmd.session_id)
            b.emit(
                MessageMetadataUpdated,
                session_id=cmd.session_id,
                message_id=cmd.message_id,
                metadata=cmd.metadata,
            )
    return b.decision


def register_webhook(b: Builder, cmd: c.RegisterWebhookEndpoint) -> None:
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


def create_conclusions(b: Builder, cmd: c.CreateConclusions) -> None:
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
