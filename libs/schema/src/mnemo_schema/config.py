"""Configuration of workspaces, sessions, peers and session membership (Honcho v3 shapes)."""

from __future__ import annotations

from typing import Any, Literal

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


Configuration = WorkspaceConfiguration | MessageConfiguration
# Each stage's own instructions, beside the configuration's general ``custom_instructions``.
Stage = Literal["deriver", "summarizer", "dreamer", "peer_card", "dialectic"]
_STAGE_SECTION: dict[Stage, str] = {
    "deriver": "reasoning",
    "summarizer": "summary",
    "dreamer": "dream",
    "peer_card": "peer_card",
    "dialectic": "dialectic",
}


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def effective(*levels: Configuration | None) -> WorkspaceConfiguration:
    """The configuration in force: workspace, then session, then message, each field of a more
    specific level (one that is set) overriding the same field of a more general one."""
    merged: dict[str, Any] = {}
    for level in levels:
        if level is not None:
            merged = _deep_merge(merged, level.model_dump(exclude_none=True))
    return WorkspaceConfiguration.model_validate(merged)


def reasoning_enabled(cfg: WorkspaceConfiguration) -> bool:
    """Whether memory is formed (derivation, dreams): on unless switched off."""
    return cfg.reasoning is None or cfg.reasoning.enabled is not False


def dreams_enabled(cfg: WorkspaceConfiguration) -> bool:
    """Whether the dreamer may revise the representation: needs reasoning too."""
    return reasoning_enabled(cfg) and (cfg.dream is None or cfg.dream.enabled is not False)


def uses_card(cfg: WorkspaceConfiguration) -> bool:
    """Whether reads put the peer card in front of the caller (``peer_card.use``)."""
    return cfg.peer_card is None or cfg.peer_card.use is not False


def creates_card(cfg: WorkspaceConfiguration) -> bool:
    """Whether the dreamer writes the peer card (``peer_card.create``)."""
    return cfg.peer_card is None or cfg.peer_card.create is not False


def instructions(cfg: WorkspaceConfiguration, stage: Stage) -> str | None:
    """The application's instructions for ``stage``: the general ones, then the stage's own."""
    section = getattr(cfg, _STAGE_SECTION[stage])
    parts = [cfg.custom_instructions, getattr(section, "custom_instructions", None)]
    text = "\n\n".join(p.strip() for p in parts if p and p.strip())
    return text or None
