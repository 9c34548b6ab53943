"""The deduction and induction specialists: a model in a discovery / action tool loop.

Each tool call is executed against the dream's session; a refusal returns to the model as a
tool error it can correct. A specialist stops when it answers without a tool call or when its
budget of model turns is spent. Induction's tool set has no delete, so it can only add.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mnemo_dreamer import prompts
from mnemo_dreamer.domain import CARD_KINDS, PATTERN_TYPES
from mnemo_dreamer.session import DreamSession, ToolError, render
from mnemo_runtime.models import (
    ChatModel,
    Message,
    ModelRequest,
    Stage,
    ToolResultBlock,
    ToolSpec,
    with_instructions,
)
from mnemo_runtime.precedence import precedence
from mnemo_schema.config import WorkspaceConfiguration, creates_card, instructions

Tool = Callable[[DreamSession, dict[str, Any]], Awaitable[str]]
_IDS = {"type": "array", "items": {"type": "string"}}
_LEVELS = {
    "type": "array",
    "items": {"enum": ["explicit", "deductive", "inductive", "contradiction"]},
}


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": props, "required": required}
    return ToolSpec(name=name, description=description, input_schema=schema)


async def _recent(s: DreamSession, a: dict[str, Any]) -> str:
    rows = await s.memory.recent(s.scope, int(a.get("limit") or 50), a.get("levels") or ())
    return "\n".join(render(o) for o in rows if o.id not in s.deleted) or "(none)"


async def _search(s: DreamSession, a: dict[str, Any]) -> str:
    rows = await s.memory.similar(
        s.scope, str(a["query"]), int(a.get("limit") or 10), a.get("levels") or ()
    )
    return "\n".join(render(o) for o in rows if o.id not in s.deleted) or "(none)"


async def _sources(s: DreamSession, a: dict[str, Any]) -> str:
    found = await s.observations(list(a["observation_ids"]))
    mids = [m for o in found for m in o.source_message_ids]
    msgs = await s.memory.sources(s.scope, mids)
    return (
        "\n".join(f"<{m.id}> {m.created_at:%Y-%m-%d} {m.peer_id}: {m.content}" for m in msgs)
        or "(no source messages)"
    )


DISCOVERY: Mapping[str, tuple[ToolSpec, Tool]] = {
    "recent_observations": (
        _spec(
            "recent_observations",
            "The newest live observations, newest first.",
            {"limit": {"type": "integer", "minimum": 1, "maximum": 500}, "levels": _LEVELS},
            [],
        ),
        _recent,
    ),
    "search_observations": (
        _spec(
            "search_observations",
            "Observations most similar in meaning to a query.",
            {"query": {"type": "string"}, "limit": {"type": "integer"}, "levels": _LEVELS},
            ["query"],
        ),
        _search,
    ),
    "read_sources": (
        _spec(
            "read_sources",
            "The messages explicit observations were extracted from.",
            {"observation_ids": _IDS},
            ["observation_ids"],
        ),
        _sources,
    ),
}

_CONTENT = {"type": "string", "minLength": 1}
DEDUCTION_ACTIONS: Mapping[str, tuple[ToolSpec, Tool]] = {
    "write_deduction": (
        _spec(
            "write_deduction",
            "Write a deductive observation citing its premises.",
            {"content": _CONTENT, "premise_ids": _IDS},
            ["content", "premise_ids"],
        ),
        lambda s, a: s.deduce(a["content"], a["premise_ids"]),
    ),
    "update_knowledge": (
        _spec(
            "update_knowledge",
            "Record a new value of a fact citing the old one, and delete the outdated ones.",
            {
                "content": _CONTENT,
                "premise_ids": _IDS,
                "superseded_ids": _IDS,
                "reason": {"type": "string"},
            },
            ["content", "premise_ids", "superseded_ids"],
        ),
        lambda s, a: s.update(
            a["content"], a["premise_ids"], a["superseded_ids"], str(a.get("reason") or "")
        ),
    ),
    "record_contradiction": (
        _spec(
            "record_contradiction",
            "Flag observations that cannot all hold.",
            {"content": _CONTENT, "observation_ids": _IDS},
            ["content", "observation_ids"],
        ),
        lambda s, a: s.contradiction(a["content"], a["observation_ids"]),
    ),
    "prune": (
        _spec(
            "prune",
            "Delete a stale or unsupported derived belief, with the reason.",
            {"observation_id": {"type": "string"}, "reason": _CONTENT},
            ["observation_id", "reason"],
        ),
        lambda s, a: s.prune(a["observation_id"], a["reason"]),
    ),
    "set_peer_card": (
        _spec(
            "set_peer_card",
            "Replace the peer card: stable markers only, at most 40 entries.",
            {
                "entries": {
                    "type": "array",
                    "maxItems": 40,
                    "items": {
                        "type": "object",
                        "properties": {"kind": {"enum": sorted(CARD_KINDS)}, "text": _CONTENT},
                        "required": ["kind", "text"],
                    },
                }
            },
            ["entries"],
        ),
        lambda s, a: s.set_card(list(a["entries"])),
    ),
}

INDUCTION_ACTIONS: Mapping[str, tuple[ToolSpec, Tool]] = {
    "write_pattern": (
        _spec(
            "write_pattern",
            "Write an inductive pattern citing at least two supporting observations.",
            {
                "content": _CONTENT,
                "pattern_type": {"enum": sorted(PATTERN_TYPES)},
                "premise_ids": _IDS,
            },
            ["content", "pattern_type", "premise_ids"],
        ),
        lambda s, a: s.pattern(a["content"], a["pattern_type"], a["premise_ids"]),
    ),
}


@dataclass(frozen=True)
class Specialist:
    stage: Stage
    system: str
    tools: Mapping[str, tuple[ToolSpec, Tool]]


DEDUCTION = Specialist(
    Stage.DREAMER_DEDUCTION, prompts.DEDUCTION, {**DISCOVERY, **DEDUCTION_ACTIONS}
)
INDUCTION = Specialist(
    Stage.DREAMER_INDUCTION, prompts.INDUCTION, {**DISCOVERY, **INDUCTION_ACTIONS}
)


def configured(spec: Specialist, cfg: WorkspaceConfiguration) -> Specialist:
    """``spec`` under the application's configuration: its instructions for dreams (and for the
    peer card) in the prompt, and no card tool when the card is not to be written."""
    told = [instructions(cfg, "dreamer")]
    tools = dict(spec.tools)
    if not creates_card(cfg):
        tools.pop("set_peer_card", None)
    elif "set_peer_card" in tools and cfg.peer_card and cfg.peer_card.custom_instructions:
        told.append(f"For the peer card: {cfg.peer_card.custom_instructions.strip()}")
    text = "\n\n".join(x for x in told if x) or None
    return Specialist(spec.stage, with_instructions(spec.system, text), tools)


@dataclass
class Spend:
    """What a specialist's model turns cost, as the model layer reported them."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""


async def run_specialist(
    spec: Specialist,
    model: ChatModel,
    session: DreamSession,
    card: list[str] | None,
    *,
    max_calls: int,
    max_tokens: int,
    spend: Spend,
) -> None:
    """Run one specialist's tool loop over the session until it stops or its budget is spent."""
    s = session.scope
    messages = [Message.user(prompts.opening(s.observer, s.observed, card))]
    tools = tuple(t for t, _ in spec.tools.values())
    for _ in range(max_calls):
        # A dream is background work: each turn waits while reads are answered (see
        # mnemo_runtime.precedence). It holds only its representation's lock meanwhile, which
        # no read takes.
        await precedence().background_step("dreamer", s.workspace)
        request = ModelRequest(
            stage=spec.stage,
            system=spec.system,
            messages=tuple(messages),
            tools=tools,
            max_tokens=max_tokens,
        )
        response = await model.complete(request)
        spend.calls += 1
        spend.input_tokens += response.usage.input_tokens
        spend.output_tokens += response.usage.output_tokens
        spend.model = response.model or spend.model
        if not response.tool_calls:
            return
        messages.append(response.to_message())
        results = [
            await _call(spec, session, c.id, c.name, c.input, c.malformed)
            for c in response.tool_calls
        ]
        messages.append(Message(role="user", content=tuple(results)))


async def _call(
    spec: Specialist,
    session: DreamSession,
    call_id: str,
    name: str,
    args: dict[str, Any],
    malformed: str | None,
) -> ToolResultBlock:
    if malformed is not None:
        return ToolResultBlock(tool_use_id=call_id, content=malformed, is_error=True)
    entry = spec.tools.get(name)
    if entry is None:
        return ToolResultBlock(tool_use_id=call_id, content=f"no tool {name!r} here", is_error=True)
    try:
        content = await entry[1](session, args)
    except ToolError as e:
        return ToolResultBlock(tool_use_id=call_id, content=str(e), is_error=True)
    except (KeyError, TypeError, ValueError) as e:
        return ToolResultBlock(tool_use_id=call_id, content=f"bad arguments: {e}", is_error=True)
    return ToolResultBlock(tool_use_id=call_id, content=content)
