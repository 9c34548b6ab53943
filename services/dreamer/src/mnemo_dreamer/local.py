"""The local reasoner's dreamer skills: belief revision and generalisation by rules.

This is a heuristic, not a language model. Each skill answers the specialist's tool loop in
three turns: it asks for the recent observations, reads the listed lines
(``[id] (level, YYYY-MM-DD) content [cites: a, b] [needs review]``), makes every edit it can
support in one turn of tool calls, and then stops.

Deduction: when the same attribute of one subject ("X lives in / moved to / works as / works
at ...") holds two values, the newer supersedes the older (a "now ..." deduction citing both,
the older deleted); a statement and its negation become a contradiction; a deduction marked
for review with no live premise is pruned; the card gets the name, current attributes,
named relationships and "call me ..." instructions. Induction: two or more observations
sharing a salient word yield a pattern citing them (its confidence is graded by the dreamer).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from dataclasses import dataclass

from mnemo_dreamer.quantities import quantity_updates
from mnemo_runtime.models.local.identity import MODEL_NAME
from mnemo_runtime.models.ports import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

DISCOVERY = frozenset({"recent_observations", "search_observations", "read_sources"})
_LINE = re.compile(
    r"^\[(?P<id>[^\]\s]+)\] \((?P<level>\w+), (?P<date>[\d-]+)\) (?P<content>.*?)"
    r"(?: \[cites: (?P<cites>[^\]]*)\])?(?P<review> \[needs review\])?$"
)
_PEER = re.compile(r"<peer>(.*?)</peer>", re.S)
_CARD = re.compile(r"<card>\n(.*?)\n</card>", re.S)
_ATTRS = {
    "Lives in": r"lives in|lives at|moved to|relocated to|is based in|is living in|resides in",
    "Occupation": r"works as|is working as|is employed as|became",
    "Employer": r"works at|works for|is working at|joined",
}
_ATTR = {k: re.compile(rf"^(?P<subj>[\w' -]{{1,40}}?) (?:now |currently |still )?(?:{v}) (?:an? |the )?(?P<value>.+)$", re.I) for k, v in _ATTRS.items()}  # fmt: skip
_CUT = re.compile(
    r"[,.;!]| (?:and|but|because|since|on|last|for|with|after|before|when|where|in the week of)"
    r" | in (?:\d{4}|january|february|march|april|may|june|july|august|september|october"
    r"|november|december)\b",
    re.I,
)
_NEG = re.compile(r"\b(?:not|never|no|doesn't|don't|isn't|didn't|dislikes?|hates?)\b", re.I)
_FILLER = frozenset(
    ["not", "never", "no", "doesn't", "don't", "isn't", "didn't", "does", "do", "did", "is"]
)
_REL = re.compile(
    r"\b(?:'s|has an?|have an?) (?P<rel>sister|brother|mother|father|wife|husband|partner|son|"
    r"daughter|girlfriend|boyfriend|dog|cat|best friend|boss)(?: is)? (?:named|called)? ?"
    r"(?P<name>[A-Z][\w-]+)"
)
_CALL_ME = re.compile(r"\b(?:wants|asks|prefers|likes|would like) to be called (?P<x>[\w' -]+)")
_NAME = re.compile(r"\bname is (?P<x>[A-Z][\w-]+(?: [A-Z][\w-]+)?)")
_WORD = re.compile(r"[a-z][a-z'-]{4,}")
_STOP = frozenset(
    "about after again being below between could their there these those through under until "  # noqa: SIM905
    "which while would should other every first never often still since really thing things "
    "something going doing think wants people during where years today month months weeks "
    "january february march april june july august september october november december "
    "currently previously recently mentioned planning started trying asked using".split()
)
_LIKES = re.compile(r"\b(?:like|likes|love|loves|enjoy|enjoys|prefer|prefers|favou?rite)\b", re.I)
# Only activities (climbing, painting, running) make a pattern a sentence can state plainly:
# "Alice often spends time climbing". A shared noun ("night", "friends") says nothing about her.
_ACTIVITY = re.compile(r"[a-z]{3,}ing")
_NOT_ACTIVITY = frozenset(
    [
        "something",
        "nothing",
        "anything",
        "everything",
        "morning",
        "evening",
        "during",
        "thing",
        "bring",
        "spring",
        "string",
        "ceiling",
        "wedding",
        "building",
        "feeling",
        "meeting",
        "interesting",
        "amazing",
        "exciting",
        "going",
        "doing",
        "being",
        "having",
        "getting",
        "making",
        "taking",
        "coming",
        "saying",
        "thinking",
        "trying",
        "starting",
        "planning",
    ]
)
# Words that say when, not what: a value ending in them ("Denver now") loses them.
_WHEN_TAIL = re.compile(
    r"(?:\s+(?:now|currently|these days|nowadays|again|too|anymore|still))+$", re.I
)
_TEMPLATES = {
    "Lives in": ("{s} now lives in {v}", "no longer in {b}"),
    "Occupation": ("{s} now works as {a}{v}", "no longer as {b}"),
    "Employer": ("{s} now works at {v}", "no longer at {b}"),
}
MAX_PATTERNS = 5
MAX_PREMISES = 8


@dataclass(frozen=True)
class _Obs:
    id: str
    level: str
    date: str
    content: str
    cites: tuple[str, ...]
    review: bool
    rank: int  # position in the listing: 0 is the newest


def _listing(request: ModelRequest) -> list[_Obs] | None:
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
                _Obs(m["id"], m["level"], m["date"], m["content"], cites, bool(m["review"]), i)
            )
    return out


def _acted(request: ModelRequest) -> bool:
    return any(
        isinstance(b, ToolUseBlock) and b.name not in DISCOVERY
        for m in request.messages
        for b in m.content
    )


def _reply(
    request: ModelRequest, calls: list[tuple[str, dict[str, object]]], text: str
) -> ModelResponse:
    prompt = request.system + "".join(
        json.dumps(m.model_dump(mode="json")) for m in request.messages
    )
    out = json.dumps(calls) + text
    usage = Usage(input_tokens=len(prompt) // 4, output_tokens=max(1, len(out) // 4))
    tool_calls = tuple(ToolCall(id=f"local_{i}", name=n, input=a) for i, (n, a) in enumerate(calls))
    return ModelResponse(
        text=text, tool_calls=tool_calls, stop_reason="tool_use" if calls else "end_turn",
        usage=usage, model=MODEL_NAME,
    )  # fmt: skip


def _opening(request: ModelRequest) -> tuple[str, list[str]]:
    first = request.messages[0].text() if request.messages else ""
    peer, card = _PEER.search(first), _CARD.search(first)
    lines = [] if card is None or card[1] == "(empty)" else card[1].splitlines()
    return (peer[1].strip() if peer else ""), lines


def _value(raw: str) -> str:
    return _WHEN_TAIL.sub("", _CUT.split(raw, maxsplit=1)[0].strip()).strip()


def _name(peer: str) -> str:
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


def _update_sentence(subj: str, attr: str, value: str, before: list[str]) -> str | None:
    """A knowledge update as one sentence, or None when it would not make one."""
    subj = _name(subj.strip())
    before = [b for b in before if b.casefold() != value.casefold()]
    if not value or not before:
        return None
    new, old = _TEMPLATES[attr]
    article = (
        ""
        if re.match(r"(?:an?|the) ", value, re.I)
        else ("an " if value[:1].lower() in "aeiou" else "a ")
    )
    joined = " or ".join(before)
    sentence = f"{new.format(s=subj, a=article, v=value)}, {old.format(b=joined)}"
    return sentence if well_formed(sentence, subj) else None


def _attributes(obs: list[_Obs]) -> dict[tuple[str, str], list[tuple[_Obs, str]]]:
    """(subject, attribute) -> [(observation, value)], oldest first."""
    found: dict[tuple[str, str], list[tuple[_Obs, str]]] = defaultdict(list)
    for o in obs:
        if o.level != "explicit" or _NEG.search(o.content):
            continue
        for attr, rx in _ATTR.items():
            m = rx.match(o.content)
            if m and 0 < len(v := _value(m["value"])) <= 60:
                found[(m["subj"].strip(), attr)].append((o, v))
                break
    for vals in found.values():
        vals.sort(key=lambda ov: (ov[0].date, -ov[0].rank))
    return found


def _proposition(text: str) -> tuple[tuple[str, ...], bool]:
    words = re.findall(r"[\w']+", text.casefold())
    negative = len(_NEG.findall(text)) % 2 == 1
    norm = tuple(
        w.replace("dislike", "like").replace("hate", "like").rstrip("s")
        for w in words
        if w not in _FILLER
    )
    return norm, negative


class LocalDeduction:
    """Knowledge updates, contradictions, pruning and the card, by rules."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The deduction specialist's next turn."""
        obs = _listing(request)
        if obs is None:
            return _reply(request, [("recent_observations", {"limit": 500})], "")
        if _acted(request):
            return _reply(request, [], "local-heuristic deduction done")
        peer, card = _opening(request)
        calls = (
            self._updates(obs)
            + self._quantity_updates(peer, obs)
            + self._contradictions(obs)
            + self._prunes(obs)
        )
        new_card = _card(peer, obs, card)
        if new_card and [e["text"] for e in new_card] != card:
            calls.append(("set_peer_card", {"entries": new_card}))
        return _reply(request, calls, "" if calls else "no supported edit")

    def _updates(self, obs: list[_Obs]) -> list[tuple[str, dict[str, object]]]:
        calls: list[tuple[str, dict[str, object]]] = []
        for (subj, attr), vals in sorted(_attributes(obs).items()):
            newest, value = vals[-1]
            old = [o for o, v in vals[:-1] if v.casefold() != value.casefold()]
            if not old:
                continue
            before = list(dict.fromkeys(v for o, v in vals[:-1] if o in old))
            content = _update_sentence(subj, attr, value, before)
            if content is None:
                continue
            calls.append(("update_knowledge", {
                "content": content, "premise_ids": [newest.id, *(o.id for o in old)],
                "superseded_ids": [o.id for o in old],
                "reason": f"superseded by a newer statement ({newest.id})",
            }))  # fmt: skip
        return calls

    def _quantity_updates(self, peer: str, obs: list[_Obs]) -> list[tuple[str, dict[str, object]]]:
        return quantity_updates(peer, [(o.id, o.level, o.date, o.rank, o.content) for o in obs])

    def _contradictions(self, obs: list[_Obs]) -> list[tuple[str, dict[str, object]]]:
        flagged = {frozenset(o.cites) for o in obs if o.level == "contradiction"}
        seen: dict[tuple[str, ...], list[tuple[_Obs, bool]]] = defaultdict(list)
        for o in obs:
            if o.level == "explicit" and "no longer" not in o.content.casefold():
                norm, negative = _proposition(o.content)
                if len(norm) >= 3:
                    seen[norm].append((o, negative))
        calls: list[tuple[str, dict[str, object]]] = []
        for group in seen.values():
            pos = [o for o, n in group if not n]
            negs = [o for o, n in group if n]
            if pos and negs and frozenset({pos[0].id, negs[0].id}) not in flagged:
                a, b = pos[0], negs[0]
                calls.append(("record_contradiction", {
                    "content": f"Conflicting statements: \"{a.content}\" vs \"{b.content}\"",
                    "observation_ids": [a.id, b.id],
                }))  # fmt: skip
        return calls

    def _prunes(self, obs: list[_Obs]) -> list[tuple[str, dict[str, object]]]:
        live = {o.id for o in obs}
        return [
            ("prune", {"observation_id": o.id, "reason": "every premise it rested on was deleted"})
            for o in obs
            if o.level == "deductive" and o.review and o.cites and not set(o.cites) & live
        ]


def _card(peer: str, obs: list[_Obs], card: list[str]) -> list[dict[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    if peer and peer[0].isupper():
        entries["Name"] = ("identity", f"Name: {peer}")
    for o in sorted(obs, key=lambda o: (o.date, -o.rank)):
        if o.level != "explicit":
            continue
        if m := _NAME.search(o.content):
            entries["Name"] = ("identity", f"Name: {m['x']}")
        for m in _REL.finditer(o.content):
            rel = m["rel"].capitalize()
            entries[rel] = ("relationship", f"{rel}: {m['name']}")
        if m := _CALL_ME.search(o.content):
            entries["Instruction"] = ("instruction", f"Instruction: call them {m['x'].strip()}")
    for (_, attr), vals in sorted(_attributes(obs).items()):
        entries[attr] = ("attribute", f"{attr}: {vals[-1][1]}")
    kept = [("attribute", c) for c in card if c.split(":", 1)[0] not in entries]
    merged = [*entries.values(), *kept][:40]
    return [{"kind": k, "text": t[:500]} for k, t in merged]


class LocalInduction:
    """Patterns over observations sharing a salient word, by rules."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The induction specialist's next turn."""
        obs = _listing(request)
        if obs is None:
            return _reply(request, [("recent_observations", {"limit": 500})], "")
        if _acted(request):
            return _reply(request, [], "local-heuristic induction done")
        peer, _ = _opening(request)
        known = " ".join(o.content.casefold() for o in obs if o.level == "inductive")
        by_term: dict[str, list[_Obs]] = defaultdict(list)
        for o in obs:
            if o.level in ("explicit", "deductive"):
                for w in dict.fromkeys(_WORD.findall(o.content.casefold())):
                    if (
                        _ACTIVITY.fullmatch(w)
                        and w not in _STOP | _NOT_ACTIVITY
                        and w != peer.casefold()
                    ):
                        by_term[w].append(o)
        chosen: list[tuple[str, list[_Obs]]] = []
        # An observation and a deduction resting on it are one piece of evidence, not two.
        for term, cands in list(by_term.items()):
            cited = {c for o in cands for c in o.cites}
            by_term[term] = [o for o in cands if o.id not in cited]
        for term, group in sorted(by_term.items(), key=lambda tg: (-len(tg[1]), tg[0])):
            ids = {o.id for o in group}
            if len(group) < 2 or f" {term} " in f" {known} ":
                continue
            if any(ids <= {o.id for o in g} for _, g in chosen):
                continue
            chosen.append((term, group))
            if len(chosen) == MAX_PATTERNS:
                break
        calls: list[tuple[str, dict[str, object]]] = []
        for term, group in chosen:
            liked = any(_LIKES.search(o.content) for o in group)
            name = _name(peer)
            # A pattern is said as a plain sentence about the peer, or not at all.
            content = f"{name} enjoys {term}" if liked else f"{name} often spends time {term}"
            if not name or not well_formed(content, name):
                continue
            calls.append(("write_pattern", {
                "content": content, "pattern_type": "preference" if liked else "tendency",
                "premise_ids": [o.id for o in group[:MAX_PREMISES]],
            }))  # fmt: skip
        return _reply(request, calls, "" if calls else "no supported pattern")
