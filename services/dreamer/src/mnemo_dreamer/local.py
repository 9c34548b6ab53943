"""The local reasoner's dreamer skills: belief revision and generalisation by rules.

This is a heuristic, not a language model. Each skill answers the specialist's tool loop in
three turns: it asks for the recent observations, reads the listed lines
(``[id] (level, YYYY-MM-DD) content [cites: a, b] [needs review]``), makes every edit it can
support in one turn of tool calls, and then stops. This module reads the turns and writes the
replies both skills share; the skills are ``local_deduction`` and ``local_induction``.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass

from mnemo_runtime.models.local.identity import MODEL_NAME
from mnemo_runtime.models.ports import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

Calls = list[tuple[str, dict[str, object]]]
DISCOVERY = frozenset({"recent_observations", "search_observations", "read_sources"})
_LINE = re.compile(
    r"^\[(?P<id>[^\]\s]+)\] \((?P<level>\w+), (?P<date>[\d-]+)\) (?P<content>.*?)"
    r"(?: \[cites: (?P<cites>[^\]]*)\])?(?P<review> \[needs review\])?$"
)
_PEER = re.compile(r"<peer>(.*?)</peer>", re.S)
_CARD = re.compile(r"<card>\n(.*?)\n</card>", re.S)


@dataclass(frozen=True)
class Obs:
    """One line of the listing."""

    id: str
    level: str
    date: str
    content: str
    cites: tuple[str, ...]
    review: bool
    rank: int  # position in the listing: 0 is the newest


def listing(request: ModelRequest) -> list[Obs] | None:
    """The observations of the last recent_observations result, or None before one."""
    asked = {
        b.id
        for m in request.messages
        for b in m.content
        if isinstance(b, ToolUseBlock) and b.name == "recent_observations"
    }
    results = [
        b
        for m in request.messages
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.tool_use_id in asked and not b.is_error
    ]
    if not results:
        return None
    out = []
    for i, line in enumerate(results[-1].content.splitlines()):
        m = _LINE.match(line.strip())
        if m:
            cites = tuple(c.strip() for c in (m["cites"] or "").split(",") if c.strip())
            out.append(
                Obs(m["id"], m["level"], m["date"], m["content"], cites, bool(m["review"]), i)
            )
    return out


def acted(request: ModelRequest) -> bool:
    """Whether the skill has made its edits already (any call beyond discovery)."""
    return any(
        isinstance(b, ToolUseBlock) and b.name not in DISCOVERY
        for m in request.messages
        for b in m.content
    )


def reply(request: ModelRequest, calls: Calls, text: str) -> ModelResponse:
    """The skill's turn: ``calls`` to make (none: it stops), with ``text``."""
    prompt = request.system + "".join(
        json.dumps(m.model_dump(mode="json")) for m in request.messages
    )
    out = json.dumps(calls) + text
    usage = Usage(input_tokens=len(prompt) // 4, output_tokens=max(1, len(out) // 4))
    tool_calls = tuple(ToolCall(id=f"local_{i}", name=n, input=a) for i, (n, a) in enumerate(calls))
    return ModelResponse(
        text=text,
        tool_calls=tool_calls,
        stop_reason="tool_use" if calls else "end_turn",
        usage=usage,
        model=MODEL_NAME,
    )


def opening(request: ModelRequest) -> tuple[str, list[str]]:
    """The peer the dream is about and its card's lines, from the opening turn."""
    first = request.messages[0].text() if request.messages else ""
    peer, card = _PEER.search(first), _CARD.search(first)
    lines = [] if card is None or card[1] == "(empty)" else card[1].splitlines()
    return (peer[1].strip() if peer else ""), lines


def listed(request: ModelRequest, skill: str) -> list[Obs] | ModelResponse:
    """The listing to act on; or the turn every skill takes alike: asking for the listing
    first, and stopping once it has acted."""
    obs = listing(request)
    if obs is None:
        return reply(request, [("recent_observations", {"limit": 500})], "")
    if acted(request):
        return reply(request, [], f"local-heuristic {skill} done")
    return obs


def subject_name(peer: str) -> str:
    """The peer's name as a sentence's subject."""
    return peer[:1].upper() + peer[1:] if peer else ""


def well_formed(sentence: str, subject: str) -> bool:
    """Whether ``sentence`` states something about ``subject`` as a plain sentence: it opens
    with the subject's name, capitalised, has a verb after it, no repeated words in a row, no
    brackets or colons left from a template."""
    words = sentence.split()
    if len(words) < 3 or not sentence.startswith(subject) or not subject[:1].isupper():
        return False
    if any(a.casefold() == b.casefold() for a, b in itertools.pairwise(words)):
        return False
    return not any(ch in sentence for ch in "():[]")
