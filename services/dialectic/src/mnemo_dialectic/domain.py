"""The dialectic's pure parts: what it reads, how it is shown to the model, what it read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemo_runtime.models import Stage
from mnemo_runtime.vectors import Scope
from mnemo_schema.dialectic_queries import (
    Citations,
    ConclusionLevel,
    Evidence,
    EvidenceMessageRef,
    EvidenceObservation,
    EvidenceToolCall,
    ReasoningLevel,
)


@dataclass(frozen=True)
class View:
    """What one chat may read: one (observer, observed) representation and the messages that
    fed it, or, without observer and observed, the whole workspace."""

    workspace: str
    observer: str | None = None
    observed: str | None = None

    def __post_init__(self) -> None:
        if (self.observer is None) != (self.observed is None):
            raise ValueError("observer and observed go together: a representation has both")

    @property
    def scope(self) -> Scope | None:
        """The representation's key, or None for the whole workspace."""
        if self.observer is None or self.observed is None:
            return None
        return Scope(self.workspace, self.observer, self.observed)


@dataclass(frozen=True)
class Obs:
    """An observation of the representation being asked about."""

    id: str
    level: ConclusionLevel
    content: str
    created_at: datetime
    observer: str
    observed: str
    session_id: str | None = None
    observed_at: datetime | None = None
    premise_ids: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    distance: float | None = None
    """Cosine distance to the question or search that found it, when the engine compared."""

    @property
    def at(self) -> datetime:
        """When the fact holds, as well as it is known: its stated date, else when it was made."""
        return self.observed_at or self.created_at


@dataclass(frozen=True)
class Msg:
    """A message that fed the representation."""

    id: str
    session_id: str
    peer_id: str
    content: str
    created_at: datetime
    seq: int = 0


def stage_of(level: ReasoningLevel) -> Stage:
    """The model stage a reasoning level runs on."""
    return Stage(f"dialectic_{level}")


def render_observation(o: Obs) -> str:
    """One observation per line, ``[id] (level, date[, match S]) content``, premises below.

    ``match`` is 1 - cosine distance to what found it, when the engine compared vectors.
    """
    match = "" if o.distance is None else f", match {1.0 - o.distance:.2f}"
    line = f"[{o.id}] ({o.level}, {o.at.date().isoformat()}{match}) {o.content}"
    if o.premise_ids:
        line += f"\n    premises: {', '.join(o.premise_ids)}"
    return line


_OBSERVATION = re.compile(
    r"^\[(?P<id>[^\]\s]+)\] \((?P<level>\w+), (?P<date>[\d-]+)(?:, match (?P<match>[\d.-]+))?\)"
    r" (?P<content>.+)$"
)
_MESSAGE = re.compile(
    r"^\{(?P<id>[^}\s]+)\} \((?P<session>[^,]+), (?P<peer>[^,]+), (?P<when>[^)]+)\) (?P<content>.+)$"
)


@dataclass(frozen=True)
class Line:
    """An observation or message as rendered above, read back (by the local reasoner)."""

    id: str
    kind: str  # an observation's level, or "message"
    date: str
    content: str
    match: float | None = None
    peer: str = ""


def parse_line(line: str) -> Line | None:
    """The observation or message ``render_observation`` / ``render_message`` made ``line``."""
    if m := _OBSERVATION.match(line.strip()):
        match = float(m["match"]) if m["match"] else None
        return Line(m["id"], m["level"], m["date"], m["content"].strip(), match)
    if m := _MESSAGE.match(line.strip()):
        return Line(m["id"], "message", m["when"][:10], m["content"].strip(), peer=m["peer"])
    return None


def render_observations(obs: list[Obs], empty: str = "(no observations found)") -> str:
    """Observations for the model, or ``empty``."""
    return "\n".join(render_observation(o) for o in obs) if obs else empty


def render_message(m: Msg) -> str:
    """One message, ``{id} (session, peer, time) content``."""
    when = m.created_at.strftime("%Y-%m-%d %H:%M")
    return f"{{{m.id}}} ({m.session_id}, {m.peer_id}, {when}) {m.content}"


def render_messages(msgs: list[Msg], empty: str = "(no messages found)") -> str:
    """Messages for the model, or ``empty``."""
    return "\n".join(render_message(m) for m in msgs) if msgs else empty


def first_turn(
    question: str,
    observed: str | None,
    prefetched: list[Obs],
    response_format: dict[str, Any] | None = None,
) -> str:
    """The opening user turn: the question, whom it is about, the prefetched observations and,
    when the answer must have a shape, its JSON Schema."""
    about = f"<peer>{observed}</peer>" if observed else "<scope>every peer of the workspace</scope>"
    text = (
        f"<question>{question}</question>\n"
        f"{about}\n"
        "<observations>\n"
        f"{render_observations(prefetched)}\n"
        "</observations>"
    )
    if response_format is not None:
        text += (
            "\n<response_format>\n"
            f"{json.dumps(response_format, ensure_ascii=False)}\n"
            "</response_format>\n"
            "The answer's content must be a JSON text matching this schema, nothing else."
        )
    return text


_RESPONSE_FORMAT = re.compile(r"<response_format>\n(.*?)\n</response_format>", re.S)


def response_format_in(text: str) -> dict[str, Any] | None:
    """The JSON Schema ``first_turn`` put in ``text``, if any."""
    found = _RESPONSE_FORMAT.search(text)
    return None if found is None else dict(json.loads(found.group(1)))


@dataclass
class Reads:
    """What the agent accessed, collated for the evidence; insertion order is reading order."""

    observations: dict[str, Obs] = field(default_factory=dict)
    messages: dict[str, Msg] = field(default_factory=dict)
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def saw(self, *, obs: Sequence[Obs] = (), msgs: Sequence[Msg] = ()) -> None:
        """Record observations and messages the agent was shown."""
        for o in obs:
            self.observations.setdefault(o.id, o)
        for m in msgs:
            self.messages.setdefault(m.id, m)

    def called(self, name: str, tool_input: dict[str, Any]) -> None:
        """Record a tool call that succeeded."""
        self.tool_calls.append((name, dict(tool_input)))

    def cite(self, observation_ids: list[str], message_ids: list[str]) -> Citations:
        """The cited ids that were actually read; the rest cannot be vouched for."""
        return Citations(
            observation_ids=_dedupe(i for i in observation_ids if i in self.observations),
            message_ids=_dedupe(i for i in message_ids if i in self.messages),
        )

    def evidence(self) -> Evidence:
        """The reads in the API's evidence shape."""
        return Evidence(
            conclusions=[
                EvidenceObservation(
                    id=o.id,
                    level=o.level,
                    content=o.content,
                    created_at=o.created_at,
                    session_id=o.session_id,
                    observer_id=o.observer,
                    observed_id=o.observed,
                    source_ids=list(o.premise_ids),
                )
                for o in self.observations.values()
            ],
            messages=[
                EvidenceMessageRef(
                    id=m.id, session_id=m.session_id, peer_id=m.peer_id, created_at=m.created_at
                )
                for m in self.messages.values()
            ],
            tool_calls=[EvidenceToolCall(tool_name=n, tool_input=i) for n, i in self.tool_calls],
        )


def _dedupe(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def budget_note(budget: int) -> str:
    """Appended to an answer written when the retrieval budget ran out."""
    return (
        f"(Retrieval stopped at this reasoning level's budget of {budget} tool turns; "
        "this answer rests only on what was found by then.)"
    )


_PIECE = re.compile(r"\S+\s*")


def pieces(text: str, words: int = 4) -> list[str]:
    """``text`` cut into small pieces of a few words, for streaming; joined they are ``text``."""
    tokens = _PIECE.findall(text)
    lead = text[: len(text) - len(text.lstrip())]
    out = ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]
    if out and lead:
        out[0] = lead + out[0]
    return out or ([text] if text else [])
