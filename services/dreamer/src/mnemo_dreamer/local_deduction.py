"""The local reasoner's deduction skill (see ``local``): belief revision by rules.

When the same attribute of one subject ("X lives in / moved to / works as / works at ...") holds
two values, the newer supersedes the older (a "now ..." deduction citing both, the older
deleted); a statement and its negation become a contradiction; a deduction marked for review
with no live premise is pruned; the card gets the name, current attributes, named
relationships and "call me ..." instructions.
"""

from __future__ import annotations

import re
from collections import defaultdict

from mnemo_dreamer.local import (
    Calls,
    Obs,
    listed,
    opening,
    reply,
    subject_name,
    well_formed,
)
from mnemo_dreamer.quantities import quantity_updates
from mnemo_runtime.models.ports import ModelRequest, ModelResponse

_ATTRS = {
    "Lives in": r"lives in|lives at|moved to|relocated to|is based in|is living in|resides in",
    "Occupation": r"works as|is working as|is employed as|became",
    "Employer": r"works at|works for|is working at|joined",
}
_ATTR = {
    k: re.compile(
        rf"^(?P<subj>[\w' -]{{1,40}}?) (?:now |currently |still )?(?:{v}) (?:an? |the )?(?P<value>.+)$",
        re.I,
    )
    for k, v in _ATTRS.items()
}
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
# Words that say when, not what: a value ending in them ("Denver now") loses them.
_WHEN_TAIL = re.compile(
    r"(?:\s+(?:now|currently|these days|nowadays|again|too|anymore|still))+$", re.I
)
_TEMPLATES = {
    "Lives in": ("{s} now lives in {v}", "no longer in {b}"),
    "Occupation": ("{s} now works as {a}{v}", "no longer as {b}"),
    "Employer": ("{s} now works at {v}", "no longer at {b}"),
}


def _value(raw: str) -> str:
    return _WHEN_TAIL.sub("", _CUT.split(raw, maxsplit=1)[0].strip()).strip()


def _update_sentence(subj: str, attr: str, value: str, before: list[str]) -> str | None:
    """A knowledge update as one sentence, or None when it would not make one."""
    subj = subject_name(subj.strip())
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


def _attributes(obs: list[Obs]) -> dict[tuple[str, str], list[tuple[Obs, str]]]:
    """(subject, attribute) -> [(observation, value)], oldest first."""
    found: dict[tuple[str, str], list[tuple[Obs, str]]] = defaultdict(list)
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
        obs = listed(request, "deduction")
        if isinstance(obs, ModelResponse):
            return obs
        peer, card = opening(request)
        calls = (
            self._updates(obs)
            + self._quantity_updates(peer, obs)
            + self._contradictions(obs)
            + self._prunes(obs)
        )
        new_card = _card(peer, obs, card)
        if new_card and [e["text"] for e in new_card] != card:
            calls.append(("set_peer_card", {"entries": new_card}))
        return reply(request, calls, "" if calls else "no supported edit")

    def _updates(self, obs: list[Obs]) -> Calls:
        calls: Calls = []
        for (subj, attr), vals in sorted(_attributes(obs).items()):
            newest, value = vals[-1]
            old = [o for o, v in vals[:-1] if v.casefold() != value.casefold()]
            if not old:
                continue
            before = list(dict.fromkeys(v for o, v in vals[:-1] if o in old))
            content = _update_sentence(subj, attr, value, before)
            if content is None:
                continue
            calls.append(
                (
                    "update_knowledge",
                    {
                        "content": content,
                        "premise_ids": [newest.id, *(o.id for o in old)],
                        "superseded_ids": [o.id for o in old],
                        "reason": f"superseded by a newer statement ({newest.id})",
                    },
                )
            )
        return calls

    def _quantity_updates(self, peer: str, obs: list[Obs]) -> Calls:
        return quantity_updates(peer, [(o.id, o.level, o.date, o.rank, o.content) for o in obs])

    def _contradictions(self, obs: list[Obs]) -> Calls:
        flagged = {frozenset(o.cites) for o in obs if o.level == "contradiction"}
        seen: dict[tuple[str, ...], list[tuple[Obs, bool]]] = defaultdict(list)
        for o in obs:
            if o.level == "explicit" and "no longer" not in o.content.casefold():
                norm, negative = _proposition(o.content)
                if len(norm) >= 3:
                    seen[norm].append((o, negative))
        calls: Calls = []
        for group in seen.values():
            pos = [o for o, n in group if not n]
            negs = [o for o, n in group if n]
            if pos and negs and frozenset({pos[0].id, negs[0].id}) not in flagged:
                a, b = pos[0], negs[0]
                calls.append(
                    (
                        "record_contradiction",
                        {
                            "content": f'Conflicting statements: "{a.content}" vs "{b.content}"',
                            "observation_ids": [a.id, b.id],
                        },
                    )
                )
        return calls

    def _prunes(self, obs: list[Obs]) -> Calls:
        live = {o.id for o in obs}
        return [
            ("prune", {"observation_id": o.id, "reason": "every premise it rested on was deleted"})
            for o in obs
            if o.level == "deductive" and o.review and o.cites and not set(o.cites) & live
        ]


def _card(peer: str, obs: list[Obs], card: list[str]) -> list[dict[str, str]]:
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
