"""LongMemEval (``longmemeval_s.json`` / ``_m`` / ``_oracle``): one case per question."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo_bench.cases import Case, Question, Session, Turn


def parse_lme_date(text: object) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' as an aware UTC datetime; None when unreadable."""
    if not isinstance(text, str):
        return None
    cleaned = " ".join(p for p in text.split() if not p.startswith("("))
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def longmemeval_case(item: dict[str, Any]) -> Case:
    """One LongMemEval question and its haystack; turns with ``has_answer`` are the evidence."""
    qid = str(item["question_id"])
    sessions: list[Session] = []
    evidence: list[str] = []
    ids = item.get("haystack_session_ids") or []
    dates = item.get("haystack_dates") or []
    for n, raw in enumerate(item.get("haystack_sessions") or []):
        sid = str(ids[n]) if n < len(ids) else f"s{n}"
        start = parse_lme_date(dates[n]) if n < len(dates) else None
        turns: list[Turn] = []
        for i, t in enumerate(raw):
            turn_id = f"{sid}:{i}"
            at = start + timedelta(minutes=i) if start else None
            turns.append(Turn(turn_id, str(t["role"]), str(t["content"]), at))
            if t.get("has_answer"):
                evidence.append(turn_id)
        sessions.append(Session(id=sid, at=start, turns=tuple(turns)))
    question = Question(
        id=qid,
        text=str(item["question"]),
        answer=str(item["answer"]),
        category=str(item["question_type"]),
        evidence=tuple(evidence),
        asked_at=parse_lme_date(item.get("question_date")),
        abstention=qid.endswith("_abs"),
    )
    return Case(
        id=qid, speakers=("user", "assistant"), sessions=tuple(sessions), questions=(question,)
    )


def read_longmemeval(path: Path) -> list[Case]:
    """Every question of a LongMemEval file, each with its own haystack."""
    return [longmemeval_case(item) for item in json.loads(path.read_text())]
