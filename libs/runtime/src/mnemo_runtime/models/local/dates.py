"""Relative time expressions resolved against a message's date (heuristic, English only).

Conventions, chosen once so every observation reads the same way: weeks start on Monday;
"last Friday" is the latest Friday strictly before the message (a week back when said on a
Friday); "this Friday" is the Friday of the message's week; "next Friday" is the Friday of the
following week; a weekend is named by its Saturday. A bare weekday ("on Saturday") points back
unless the clause speaks of the future. Vague amounts ("a few days ago") stay vague but get
an anchor ("a few days before 8 May 2023"). Seasons follow the northern hemisphere; winter,
which straddles two years, is left as written.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
}
_VAGUE = ("a few", "few", "several", "some")
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11)}
# Prepositions the resolved phrase replaces ("on Saturday" -> "on 6 May 2023") and those it
# keeps, because they change the meaning ("since last week" -> "since the week of ...").
_REPLACED = {"on", "in", "during", "at", "over"}
_KEPT = {"since", "from", "until", "till", "before", "after", "by", "of", "to"}

_QTY = (
    r"(?P<qty>\d+|a couple(?: of)?|couple of|a few|few|several|some|an?|one|two|three|four|"
    r"five|six|seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(?P<unit>day|week|month|year)s?"
_DAY = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PATTERN = re.compile(
    r"(?:\b(?P<prep>" + "|".join(sorted(_REPLACED | _KEPT)) + r")\s+)?\b(?:"
    r"(?P<daybefore>the day before yesterday)|(?P<dayafter>the day after tomorrow)"
    # "feels like yesterday" is a figure of speech, not a date.
    r"|(?<!like )(?<!like just )(?P<yesterday>yesterday)(?!')|(?P<tomorrow>tomorrow)(?!')"
    r"|(?P<lastnight>last night)"
    r"|(?P<part>this (?:morning|afternoon|evening)|tonight)"
    r"|(?P<today>(?:earlier |later )?today)(?!')"
    # "the last week" means the past seven days, not the previous calendar week.
    r"|(?<!the )(?P<rel>last|this past|this coming|the coming|coming|this|next) "
    r"(?:(?P<period>week|weekend|month|year)|" + _DAY + r"|(?P<season>spring|summer|autumn|fall))"
    r"|" + _QTY + r" " + _UNIT + r" (?P<dir>ago|from now)"
    r"|(?P<inside>in) "
    + _QTY.replace("qty", "qty2")
    + r" "
    + _UNIT.replace("unit", "unit2")
    + r"|(?P<bare>"
    + _DAY.replace("wd", "wd2")
    + r")(?!s\b)"
    # A possessive ("yesterday's game") would read badly once resolved; it is left alone.
    r")\b(?!['’]s\b)",
    re.IGNORECASE,
)
_FUTURE = re.compile(
    r"\b(?:will|'ll|gonna|going to|plan|plans|planning|hope|hoping|want|wanna|intend|"
    r"looking forward|can't wait|excited to|about to|next|tomorrow|(?:'m|am|are|'re) \w+ing)\b",
    re.IGNORECASE,
)
_DURATION = re.compile(
    r"\bfor (?:the (?:past|last) )?(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve|a couple of|a few|several|many) (?:day|week|month|year)s?(?: now)?\b",
    re.IGNORECASE,
)
_PERFECT = re.compile(r"\b(?:has|have|'ve)\b", re.IGNORECASE)


def day_name(d: date) -> str:
    """``7 May 2023``."""
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _shift_month(d: date, months: int) -> tuple[int, int]:
    total = d.year * 12 + d.month - 1 + months
    return total // 12, total % 12 + 1


def _month(d: date, months: int) -> tuple[str, str]:
    year, month = _shift_month(d, months)
    name = f"{_MONTHS[month - 1]} {year}"
    return f"in {name}", name


def _day(d: date) -> tuple[str, str]:
    return f"on {day_name(d)}", day_name(d)


def _week(d: date) -> tuple[str, str]:
    name = f"the week of {day_name(_monday(d))}"
    return f"in {name}", name


def _weekend(saturday: date) -> tuple[str, str]:
    name = f"the weekend of {day_name(saturday)}"
    return f"on {name}", name


def _year(year: int) -> tuple[str, str]:
    return f"in {year}", str(year)


def _season(season: str, year: int) -> tuple[str, str]:
    return f"in {season} {year}", f"{season} {year}"


def _relative(rel: str, period: str, when: date) -> tuple[str, str]:
    step = {"last": -1, "this past": -1, "next": 1}.get(rel, 0)
    if period == "week":
        return _week(when + timedelta(weeks=step))
    if period == "weekend":
        return _weekend(_monday(when) + timedelta(days=5 + 7 * step))
    if period == "month":
        return _month(when, step)
    return _year(when.year + step)


def _weekday(rel: str, weekday: int, when: date) -> date:
    if rel in {"last", "this past"}:
        back = (when.weekday() - weekday - 1) % 7 + 1
        return when - timedelta(days=back)
    if rel in {"coming", "the coming", "this coming"}:
        return when + timedelta(days=(weekday - when.weekday() - 1) % 7 + 1)
    week = _monday(when) + timedelta(weeks=1 if rel == "next" else 0)
    return week + timedelta(days=weekday)


def _season_year(rel: str, season: str, when: date) -> int:
    first, last = _SEASONS[season]
    if rel in {"last", "this past"}:
        return when.year if when.month > last else when.year - 1
    if rel == "next":
        return when.year + 1 if when.month >= first else when.year
    return when.year


def _amount(qty: str, unit: str, when: date, sign: int) -> tuple[str, str]:
    q = qty.lower()
    if q in _VAGUE:
        anchor = "before" if sign < 0 else "after"
        phrase = f"{q} {unit}s {anchor} {day_name(when)}"
        return phrase, phrase
    n = int(q) if q.isdigit() else _NUMBERS[q]
    if unit == "day":
        return _day(when + timedelta(days=sign * n))
    if unit == "week":
        return _week(when + timedelta(weeks=sign * n))
    if unit == "month":
        return _month(when, sign * n)
    return _year(when.year + sign * n)


def _resolve(m: re.Match[str], when: date, future: bool) -> tuple[str, str]:
    if m["daybefore"]:
        return _day(when - timedelta(days=2))
    if m["dayafter"]:
        return _day(when + timedelta(days=2))
    if m["yesterday"]:
        return _day(when - timedelta(days=1))
    if m["tomorrow"]:
        return _day(when + timedelta(days=1))
    if m["lastnight"]:
        name = f"the night of {day_name(when - timedelta(days=1))}"
        return f"on {name}", name
    if m["part"]:
        part = m["part"].lower().removeprefix("this ").replace("tonight", "evening")
        name = f"the {part} of {day_name(when)}"
        return f"on {name}", name
    if m["today"]:
        return _day(when)
    if m["rel"]:
        rel = m["rel"].lower()
        if m["period"]:
            return _relative(rel, m["period"].lower(), when)
        if m["wd"]:
            return _day(_weekday(rel, _WEEKDAYS.index(m["wd"].lower()), when))
        season = m["season"].lower()
        return _season("autumn" if season == "fall" else season, _season_year(rel, season, when))
    if m["qty"]:
        return _amount(m["qty"], m["unit"].lower(), when, -1 if m["dir"].lower() == "ago" else 1)
    if m["inside"]:
        return _amount(m["qty2"], m["unit2"].lower(), when, 1)
    weekday = _WEEKDAYS.index(m["wd2"].lower())
    return _day(_weekday("coming" if future else "last", weekday, when))


def resolve_dates(text: str, when: date) -> str:
    """``text`` with each relative time expression replaced by the absolute one it means."""
    future = _FUTURE.search(text) is not None

    def replace(m: re.Match[str]) -> str:
        with_prep, bare = _resolve(m, when, future)
        prep = m["prep"]
        out = f"{prep} {bare}" if prep and prep.lower() in _KEPT else with_prep
        # A resolved phrase opening the sentence keeps the sentence's capital letter.
        return out[0].upper() + out[1:] if m.group(0)[0].isupper() else out

    resolved = _PATTERN.sub(replace, text)
    if _PERFECT.search(resolved):
        # A running duration ("have known them for 4 years") is true as of the message date.
        resolved = _DURATION.sub(
            lambda m: f"{m.group(0).removesuffix(' now')} as of {day_name(when)}", resolved
        )
    return resolved
