"""Configuration of workspaces, sessions, peers and session membership (Honcho v3 shapes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mnemo_schema.text import StorableText


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReasoningConfiguration(_Strict):
    enabled: bool | None = None
    custom_instructions: StorableText | None = None


class PeerCardConfiguration(_Strict):
    use: bool | None = None
    create: bool | None = None
    custom_instructions: StorableText | None = None


class SummaryConfiguration(_Strict):
    enabled: bool | None = None
    messages_per_short_summary: int | None = Field(default=None, ge=1)
    messages_per_long_summary: int | None = Field(default=None, ge=1)
    custom_instructions: StorableText | None = None


class DreamConfiguration(_Strict):
    enabled: bool | None = None
    custom_instructions: StorableText | None = None


class DialecticConfiguration(_Strict):
    custom_instructions: StorableText | None = None


class WorkspaceConfiguration(_Strict):
    """Workspace- or session-level behaviour switches."""

    custom_instructions: StorableText | None = None
    reasoning: ReasoningConfiguration | None = None
    peer_card: PeerCardConfiguration | None = None
    summary: SummaryConfiguration | None = None
    dream: DreamConfiguration | None = None
    dialectic: DialecticConfiguration | None = None


SessionConfiguration = WorkspaceConfiguration


class PeerConfig(_Strict):
    """Peer-level configuration: observe_me=False keeps everyone from modelling this peer."""

    observe_me: bool | None = None


class SessionPeerConfig(_Strict):
    """A peer's configuration inside one session (theory-of-mind switches)."""

    observe_me: bool | None = None
    observe_others: bool | None = None


class MessageConfiguration(_Strict):
    reasoning: ReasoningConfiguration | None = None
