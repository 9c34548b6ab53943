"""Knowledge updates of counts and measures, for the local heuristic dream.

"150 commits" stated earlier and "commits ... has now reached 165" stated later: the newer value
supersedes the older when the newer statement uses update language.
"""

from __future__ import annotations

import re
from collections import defaultdict

Obs = tuple[str, str, str, int, str]  # id, level, date, rank (0 = newest), content

_QTY_UNIT = r"(?:%|ms|[a-z]{3,}s)"
_QTY_BEFORE = re.compile(rf"\b(?P<num>\d[\d,]*(?:\.\d+)?)\s*(?P<unit>{_QTY_UNIT})\b", re.I)
_QTY_AFTER = re.compile(
    r"\b(?P<unit>[a-z]{3,}s)\b[^.;]{0,80}?\b(?:reached|is now|are now|now at|now|improved to"
    r"|increased to|decreased to|dropped to|grew to|up to|down to)\s+(?:about |around )?"
    r"(?P<num>\d[\d,]*(?:\.\d+)?)(?P<unit2>%|ms)?",
    re.I,
)
_UPDATE_WORDS = re.compile(
    r"\b(?:now|reached|improved|increased|decreased|dropped|grew|updated|recently)\b", re.I
)
# Durations grow by themselves ("for 4 years"); they are not values that get corrected.
_NOT_QUANTITIES = frozenset(
    [
        "seconds",
        "minutes",
        "hours",
        "days",
        "weeks",
        "months",
        "years",
        "times",
        "others",
        "things",
        "steps",
    ]
)


def _quantities(content: str) -> dict[str, str]:
    """unit -> number stated in one observation ("150 commits", "commits ... reached 165")."""
    found: dict[str, str] = {}
    for rx in (_QTY_AFTER, _QTY_BEFORE):
        for m in rx.finditer(content):
            unit = (m.groupdict().get("unit2") or m["unit"]).casefold()
            if unit not in _NOT_QUANTITIES:
                found.setdefault(unit, m["num"].replace(",", ""))
    return found


def quantity_updates(peer: str, obs: list[Obs]) -> list[tuple[str, dict[str, object]]]:
    """update_knowledge calls for counts and measures restated with update language."""
    by_unit: dict[str, list[tuple[Obs, str]]] = defaultdict(list)
    for o in obs:
        if o[1] == "explicit":
            for unit, num in _quantities(o[4]).items():
                by_unit[unit].append((o, num))
    calls: list[tuple[str, dict[str, object]]] = []
    superseded: set[str] = set()
    for unit, vals in sorted(by_unit.items()):
        vals.sort(key=lambda ov: (ov[0][2], -ov[0][3]))
        newest, value = vals[-1]
        old = list(dict.fromkeys(o for o, v in vals[:-1] if v != value and o[0] != newest[0]))
        old = [o for o in old if o[0] not in superseded]
        if not old or not _UPDATE_WORDS.search(newest[4]):
            continue
        superseded.update(o[0] for o in old)
        before = ", ".join(dict.fromkeys(v for o, v in vals[:-1] if o in old))
        calls.append(
            (
                "update_knowledge",
                {
                    "content": f"{peer}: {unit} now {value} (previously {before})",
                    "premise_ids": [newest[0], *(o[0] for o in old)],
                    "superseded_ids": [o[0] for o in old],
                    "reason": f"superseded by a newer statement ({newest[0]})",
                },
            )
        )
    return calls
