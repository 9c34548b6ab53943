"""The ingest write model: what must be known to validate a command and route a message.

Built from the workspace's entity events only (never from the projections), so ingest decides
on exactly the facts in the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnemo_schema.events import (
    Event,
    MessagePosted,
    PeerCreated,
    PeerJoinedSession,
    PeerLeftSession,
    PeerUpdated,
    SessionCreated,
    SessionDeleted,
    SessionPeerConfigured,
    WorkspaceCreated,
    WorkspaceDeleted,
)
from mnemo_schema.webhooks import WebhookEndpointDeleted, WebhookEndpointRegistered


@dataclass
class Member:
    observe_me: bool = True
    observe_others: bool = False


@dataclass
class SessionState:
    members: dict[str, Member] = field(default_factory=dict)


@dataclass
class WorkspaceModel:
    """Entities of one workspace and the highest stream position that changed them."""

    exists: bool = False
    # peer id -> peer-level observe_me
    peers: dict[str, bool] = field(default_factory=dict)
    sessions: dict[str, SessionState] = field(default_factory=dict)
    # webhook endpoint url -> its id
    webhooks: dict[str, str] = field(default_factory=dict)
    watermark: int = 0

    def apply(self, event: Event, seq: int = 0) -> None:
        """Fold one event into the model."""
        self.watermark = max(self.watermark, seq)
        match event:
            case WorkspaceCreated():
                self.exists = True
            case WorkspaceDeleted():
                self.exists = False
                self.peers.clear()
                self.sessions.clear()
                self.webhooks.clear()
            case PeerCreated(peer_id=pid, configuration=cfg):
                self.peers[pid] = cfg.observe_me is not False
            case PeerUpdated(peer_id=pid, configuration=cfg) if cfg is not None:
                if cfg.observe_me is not None:
                    self.peers[pid] = cfg.observe_me
            case SessionCreated(session_id=sid):
                self.sessions.setdefault(sid, SessionState())
            case SessionDeleted(session_id=sid):
                self.sessions.pop(sid, None)
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
