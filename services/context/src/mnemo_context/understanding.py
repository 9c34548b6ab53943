"""What a question says besides its words, read without a model: who, when, and whether "now".

- Peers named in it (by id, or by the ``name`` in their metadata), whose evidence counts more.
- Time expressions, as windows of time: absolute ones ("on 7 July, 2023", "in June 2022",
  "in 2023", "summer 2021") directly; relative ones ("last week", "two weeks ago", "last
  weekend") resolved first by the date parser the deriver uses, against a date the question
  gives ("last weekend before April 10, 2023") or else against ``now``.
- Whether it asks for the current value ("now", "currently", "latest", ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from mnemo_runtime.models.local.dates import resolve_dates

_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = r"(?P<{g}>" + "|".join(_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_DAYNUM = r"(?P<{g}>\d{{1,2}})(?:st|nd|rd|th)?"
_YEAR = r"(?P<{g}>(?:19|20)\d\d)"
_DAY_FIRST = re.compile(
    rf"\b{_DAYNUM.format(g='d')}\s+(?:of\s+)?{_MONTH.format(g='m')},?\s+{_YEAR.format(g='y')}\b",
    re.I,
)
_MONTH_FIRST = re.compile(
    rf"\b{_MONTH.format(g='m')}\.?\s+{_DAYNUM.format(g='d')},?\s+{_YEAR.format(g='y')}\b", re.I
)
_ISO = re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH.format(g='m')},?\s+(?:of\s+)?{_YEAR.format(g='y')}\b", re.I)
_SEASON_YEAR = re.compile(
    rf"\b(?P<s>spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_YEAR.format(g='y')}\b", re.I
)
_YEAR_ALONE = re.compile(rf"\b{_YEAR.format(g='y')}\b")
# "May" alone is usually the verb: a month without a year is taken only after a preposition.
_MONTH_ALONE = re.compile(
    rf"\b(?P<p>in|during|of|last|this|since|until|before|after)\s+{_MONTH.format(g='m')}\b(?!\s*\d)",
    re.I,
)
_WEEK_OF = re.compile(r"\bthe (?P<k>week|weekend) of\s*$", re.I)
# "the week before August 3, 2023", "two days after ...": a span next to the date.
_NEXT_TO = re.compile(
    r"\b(?P<n>the|a|one|two|three|four|\d+)\s+(?P<k>day|week|month)s?\s+(?P<dir>before|after)\s*$",
    re.I,
)
_COUNTS = {"the": 1, "a": 1, "one": 1, "two": 2, "three": 3, "four": 4}
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
_NOW = re.compile(
    r"\b(?:now|currently|current|latest|these days|at the moment|most recent(?:ly)?|still|"
    r"anymore|any more|nowadays|present|today)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Window:
    """A span of time [start, end)."""

    start: datetime
    end: datetime

    def holds(self, when: datetime | None) -> bool:
        """Whether ``when`` falls inside."""
        return when is not None and self.start <= when < self.end


@dataclass(frozen=True, slots=True)
class Understanding:
    named: frozenset[str]
    """Ids of the peers the question names."""
    windows: tuple[Window, ...]
    """The times it speaks of; evidence inside any of them counts more."""
    current: bool
    """Whether it asks for the current value."""


def _month(token: str) -> int:
    t = token.lower().rstrip(".")
    for i, name in enumerate(_MONTHS, start=1):
        if name.startswith(t[:3]):
            return i
    raise ValueError(token)


def _at(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _months(year: int, month: int, count: int) -> Window:
    start = date(year, month, 1)
    total = year * 12 + month - 1 + count
    return Window(_at(start), _at(date(total // 12, total % 12 + 1, 1)))


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _dates(text: str) -> list[tuple[int, int, date]]:
    """Full dates in ``text`` as (start, end, date), in order."""
    found: list[tuple[int, int, date]] = []
    for pattern in (_DAY_FIRST, _MONTH_FIRST, _ISO):
        for m in pattern.finditer(text):
            month = int(m["m"]) if pattern is _ISO else _month(m["m"])
            if (d := _day(int(m["y"]), month, int(m["d"]))) is not None:
                found.append((m.start(), m.end(), d))
    return sorted(found)


def time_windows(text: str, now: datetime | None) -> list[Window]:
    """The windows of time ``text`` speaks of, relative expressions resolved."""
    anchors = _dates(text)
    anchor = anchors[0][2] if anchors else (now.date() if now is not None else None)
    if anchor is not None:
        text = resolve_dates(text, anchor)
    out: list[Window] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for start, end, d in _dates(text):
        week = _WEEK_OF.search(text[:start])
        near = _NEXT_TO.search(text[:start])
        if near:
            n = int(near["n"]) if near["n"].isdigit() else _COUNTS[near["n"].lower()]
            span = timedelta(days=n * {"day": 1, "week": 7, "month": 30}[near["k"].lower()])
            if near["dir"].lower() == "before":
                out.append(Window(_at(d) - span, _at(d)))
            else:
                out.append(Window(_at(d) + timedelta(days=1), _at(d) + timedelta(days=1) + span))
        elif week and week["k"].lower() == "weekend":
            out.append(Window(_at(d), _at(d + timedelta(days=2))))
        elif week:
            out.append(Window(_at(d), _at(d + timedelta(days=7))))
        else:
            out.append(Window(_at(d), _at(d + timedelta(days=1))))
        taken.append((start, end))
    for m in _MONTH_YEAR.finditer(text):
        if free(m.start(), m.end()):
            out.append(_months(int(m["y"]), _month(m["m"]), 1))
            taken.append((m.start(), m.end()))
    for m in _SEASON_YEAR.finditer(text):
        if free(m.start(), m.end()):
            first, length = _SEASONS[m["s"].lower()]
            out.append(_months(int(m["y"]), first, length))
            taken.append((m.start(), m.end()))
    for m in _YEAR_ALONE.finditer(text):
        if free(m.start(), m.end()):
            out.append(_months(int(m["y"]), 1, 12))
    if anchor is not None:
        for m in _MONTH_ALONE.finditer(text):
            if not free(m.start(), m.end()):
                continue
            month = _month(m["m"])
            # The latest such month up to the anchor ("last May": strictly before its month).
            year = anchor.year
            if month > anchor.month or (m["p"].lower() == "last" and month == anchor.month):
                year -= 1
            out.append(_months(year, month, 1))
    return out


def named_peers(text: str, peers: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The peers (id -> the names they go by) that ``text`` names, as whole words."""
    lowered = text.lower()
    named = set()
    for peer, names in peers.items():
        for name in {peer, peer.replace("-", " ").replace("_", " "), *names}:
            name = name.strip().lower()
            if len(name) >= 2 and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered):
                named.add(peer)
                break
    return frozenset(named)


def understand(
    text: str, peers: Mapping[str, Iterable[str]], now: datetime | None
) -> Understanding:
    """Who the question names, the times it speaks of, and whether it asks about now."""
    return Understanding(
        named=named_peers(text, peers),
        windows=tuple(time_windows(text, now)),
        current=_NOW.search(text) is not None,
    )
