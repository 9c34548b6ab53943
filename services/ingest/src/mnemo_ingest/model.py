"""The ingest write model: what must be known to validate a command and route a message.

Built from the workspace's entity events only (never from the projections), so ingest decides
on exactly the facts in the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnemo_schema.config import WorkspaceConfiguration
from mnemo_schema.events import (
    Envelope,
    Event,
    MessageDeleted,
    MessagePosted,
    PeerCreated,
    PeerDeleted,
    PeerJoinedSession,
    PeerLeftSession,
    PeerUpdated,
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
from mnemo_schema.webhooks import WebhookEndpointDeleted, WebhookEndpointRegistered


@dataclass
class Member:
    observe_me: bool = True
    observe_others: bool = False


@dataclass
class SessionState:
    members: dict[str, Member] = field(default_factory=dict)
    configuration: WorkspaceConfiguration = field(default_factory=WorkspaceConfiguration)


@dataclass
class WorkspaceModel:
    """Entities of one workspace and the highest stream position that changed them."""

    exists: bool = False
    configuration: WorkspaceConfiguration = field(default_factory=WorkspaceConfiguration)
    # peer id -> peer-level observe_me
    peers: dict[str, bool] = field(default_factory=dict)
    sessions: dict[str, SessionState] = field(default_factory=dict)
    # webhook endpoint url -> its id
    webhooks: dict[str, str] = field(default_factory=dict)
    # scope id -> its member sessions
    scopes: dict[str, set[str]] = field(default_factory=dict)
    # What was erased (and not created again since), so that deleting it again changes nothing.
    deleted: bool = False
    deleted_sessions: set[str] = field(default_factory=set)
    deleted_peers: set[str] = field(default_factory=set)
    deleted_messages: set[str] = field(default_factory=set)
    watermark: int = 0

    def apply(self, event: Event | Envelope, seq: int = 0) -> None:
        """Fold one event into the model (one it does not follow changes nothing)."""
        self.watermark = max(self.watermark, seq)
        match event:
            case WorkspaceCreated(configuration=cfg):
                self.exists = True
                self.deleted = False
                self.configuration = cfg
            case WorkspaceUpdated(configuration=cfg) if cfg is not None:
                self.configuration = cfg
            case WorkspaceDeleted():
                self.exists = False
                self.deleted = True
                self.configuration = WorkspaceConfiguration()
                self.peers.clear()
                self.sessions.clear()
                self.webhooks.clear()
                self.scopes.clear()
                for erased in (self.deleted_sessions, self.deleted_peers, self.deleted_messages):
                    erased.clear()
            case PeerCreated(peer_id=pid, configuration=cfg):
                self.peers[pid] = cfg.observe_me is not False
                self.deleted_peers.discard(pid)
            case PeerDeleted(peer_id=pid):
                self.peers.pop(pid, None)
                self.deleted_peers.add(pid)
                for state in self.sessions.values():
                    state.members.pop(pid, None)
            case MessageDeleted(message_id=mid):
                self.deleted_messages.add(mid)
            case PeerUpdated(peer_id=pid, configuration=cfg) if cfg is not None:
                if cfg.observe_me is not None:
                    self.peers[pid] = cfg.observe_me
            case SessionCreated(session_id=sid, configuration=cfg):
                self.sessions.setdefault(sid, SessionState()).configuration = cfg
                self.deleted_sessions.discard(sid)
            case SessionUpdated(session_id=sid, configuration=cfg) if cfg is not None:
                if sid in self.sessions:
                    self.sessions[sid].configuration = cfg
            case SessionDeleted(session_id=sid):
                self.sessions.pop(sid, None)
                self.deleted_sessions.add(sid)
                for members in self.scopes.values():
                    members.discard(sid)
            case ScopeCreated(scope_id=scope):
                self.scopes.setdefault(scope, set())
            case ScopeSessionsAdded(scope_id=scope, session_ids=sids):
                self.scopes.setdefault(scope, set()).update(sids)
            case ScopeSessionRemoved(scope_id=scope, session_id=sid):
                self.scopes.get(scope, set()).discard(sid)
            case PeerJoinedSession(session_id=sid, peer_id=pid) as e:
                self.sessions.setdefault(sid, SessionState()).members[pid] = Member(
                    e.observe_me, e.observe_others
                )
            case SessionPeerConfigured(session_id=sid, peer_id=pid) as e:
                session = self.sessions.get(sid)
                if session is not None:
                    session.members[pid] = Member(e.observe_me, e.observe_others)
            case PeerLeftSession(session_id=sid, peer_id=pid):
                session = self.sessions.get(sid)
                if session is not None:
                    session.members.pop(pid, None)
            case WebhookEndpointRegistered(endpoint_id=eid, url=url):
                self.webhooks[url] = eid
            case WebhookEndpointDeleted(endpoint_id=eid):
                self.webhooks = {u: i for u, i in self.webhooks.items() if i != eid}
            case MessagePosted():
                pass
            case _:
                pass
