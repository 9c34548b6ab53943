"""LoCoMo (snap-research/LoCoMo ``locomo10.json``) into cases, tolerant of its known defects."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo_bench.cases import Case, Question, Session, Turn

# Matches well-formed "D8:6" and the malformed variants found upstream ("D:11:26", "D8:6; D9:17").
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"session_(\d+)")


def parse_locomo_date(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime; None when unreadable."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def parse_evidence(raw: object) -> tuple[str, ...]:
    """Evidence ids normalised to "D<session>:<turn>", malformed strings split, junk dropped."""
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
    out: list[str] = []
    for item in items:
        for m in _EVIDENCE.finditer(str(item)):
            ident = f"D{int(m.group(1))}:{int(m.group(2))}"
            if ident not in out:
                out.append(ident)
    return tuple(out)


def turn_text(turn: dict[str, Any]) -> str:
    """The turn's text; an image turn carries its caption as text."""
    text = str(turn.get("text", "")).strip()
    if caption := turn.get("blip_caption"):
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def _sessions(conv: dict[str, Any]) -> tuple[Session, ...]:
    # Only keys that hold turns are sessions: conv-26 lists more session dates than sessions.
    sessions: list[Session] = []
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
    for n in numbers:
        raw = conv[f"session_{n}"]
        if not isinstance(raw, list) or not raw:
            continue
        start = parse_locomo_date(str(conv.get(f"session_{n}_date_time", "")))
        turns = tuple(
            Turn(
                id=str(t["dia_id"]),
                speaker=str(t["speaker"]),
                text=turn_text(t),
                # A minute per turn keeps the original order when only the session is dated.
                at=start + timedelta(minutes=i) if start else None,
            )
            for i, t in enumerate(raw)
            if turn_text(t)
        )
        sessions.append(Session(id=f"session-{n}", at=start, turns=turns))
    return tuple(sessions)


def _question(sample_id: str, i: int, qa: dict[str, Any], known: set[str]) -> Question:
    category = str(qa.get("category", ""))
    answer = qa.get("answer", qa.get("adversarial_answer", ""))
    # Ids that point at no turn cannot be retrieved by anyone; keeping them would only lower
    # every retriever's recall alike, so they are dropped.
    evidence = tuple(e for e in parse_evidence(qa.get("evidence", [])) if e in known)
    return Question(
        id=f"{sample_id}/q{i}",
        text=str(qa["question"]),
        answer="" if answer is None else str(answer),
        category=category,
        evidence=evidence,
        abstention=category == "5",
    )


def locomo_case(item: dict[str, Any]) -> Case:
    """One LoCoMo item (a conversation and its QA) as a case."""
    conv = item["conversation"]
    sessions = _sessions(conv)
    known = {t.id for s in sessions for t in s.turns}
    questions = tuple(_question(item["sample_id"], i, qa, known) for i, qa in enumerate(item["qa"]))
    speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    return Case(
        id=str(item["sample_id"]), speakers=speakers, sessions=sessions, questions=questions
    )


def read_locomo(path: Path) -> list[Case]:
    """Every conversation in a LoCoMo JSON file."""
    return [locomo_case(item) for item in json.loads(path.read_text())]
