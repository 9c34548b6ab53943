"""The local reasoner's induction skill (see ``local``): generalisation by rules.

Two or more observations sharing a salient activity yield a pattern citing them (its confidence
is graded by the dreamer).
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
from mnemo_runtime.models.ports import ModelRequest, ModelResponse

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
MAX_PATTERNS = 5
MAX_PREMISES = 8


class LocalInduction:
    """Patterns over observations sharing a salient word, by rules."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The induction specialist's next turn."""
        obs = listed(request, "induction")
        if isinstance(obs, ModelResponse):
            return obs
        peer, _ = opening(request)
        known = " ".join(o.content.casefold() for o in obs if o.level == "inductive")
        by_term: dict[str, list[Obs]] = defaultdict(list)
        for o in obs:
            if o.level in ("explicit", "deductive"):
                for w in dict.fromkeys(_WORD.findall(o.content.casefold())):
                    if (
                        _ACTIVITY.fullmatch(w)
                        and w not in _STOP | _NOT_ACTIVITY
                        and w != peer.casefold()
                    ):
                        by_term[w].append(o)
        chosen: list[tuple[str, list[Obs]]] = []
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
        calls: Calls = []
        for term, group in chosen:
            liked = any(_LIKES.search(o.content) for o in group)
            name = subject_name(peer)
            # A pattern is said as a plain sentence about the peer, or not at all.
            content = f"{name} enjoys {term}" if liked else f"{name} often spends time {term}"
            if not name or not well_formed(content, name):
                continue
            calls.append(
                (
                    "write_pattern",
                    {
                        "content": content,
                        "pattern_type": "preference" if liked else "tendency",
                        "premise_ids": [o.id for o in group[:MAX_PREMISES]],
                    },
                )
            )
        return reply(request, calls, "" if calls else "no supported pattern")
