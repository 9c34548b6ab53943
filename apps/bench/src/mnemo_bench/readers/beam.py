"""BEAM chats (mohammadtavakoli78/BEAM ``chats/<size>/<id>/``) into cases."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo_bench.cases import Case, Question, Session, Turn

# The reference answer's key differs by category.
ANSWER_KEYS = ("answer", "ideal_response", "ideal_answer", "ideal_summary", "expected_compliance")


def parse_anchor(text: object) -> datetime | None:
    """'March-15-2024' as an aware UTC datetime; None when absent or unreadable."""
    if not isinstance(text, str):
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def flatten_ids(raw: object) -> tuple[str, ...]:
    """``source_chat_ids`` as message ids: a list, a dict of lists, or absent (abstention)."""
    values: list[object]
    if isinstance(raw, dict):
        values = [v for part in raw.values() for v in (part if isinstance(part, list) else [part])]
    elif isinstance(raw, list):
        values = list(raw)
    else:
        values = []
    out: list[str] = []
    for v in values:
        if isinstance(v, int | str) and str(v) not in out:
            out.append(str(v))
    return tuple(out)


def _sessions(chat: list[dict[str, Any]]) -> tuple[Session, ...]:
    sessions: list[Session] = []
    anchor = datetime(2024, 1, 1, tzinfo=UTC)
    minute = 0
    for batch in chat:
        anchor = parse_anchor(batch.get("time_anchor")) or anchor
        start = anchor
        turns: list[Turn] = []
        for pair in batch.get("turns", []):
            for msg in pair if isinstance(pair, list) else [pair]:
                if (dated := parse_anchor(msg.get("time_anchor"))) is not None and dated > anchor:
                    anchor, minute = dated, 0
                # Messages only carry a day at most; a minute apart keeps their order.
                at = anchor + timedelta(minutes=minute)
                minute += 1
                turns.append(Turn(str(msg["id"]), str(msg["role"]), str(msg["content"]), at))
        sessions.append(
            Session(
                id=f"batch-{batch.get('batch_number', len(sessions) + 1)}",
                at=start,
                turns=tuple(turns),
            )
        )
    return tuple(sessions)


def _questions(chat_id: str, probing: dict[str, list[dict[str, Any]]]) -> tuple[Question, ...]:
    out: list[Question] = []
    for category, items in probing.items():
        for i, q in enumerate(items):
            answer = next((q[k] for k in ANSWER_KEYS if k in q), "")
            rubric = tuple(str(r) for r in q.get("rubric", []))
            out.append(
                Question(
                    id=f"{chat_id}/{category}/{i}",
                    text=str(q["question"]),
                    answer=answer if isinstance(answer, str) else json.dumps(answer),
                    category=category,
                    evidence=flatten_ids(q.get("source_chat_ids")),
                    rubric=rubric,
                    ordering=rubric if category == "event_ordering" else (),
                    abstention=category == "abstention",
                )
            )
    return tuple(out)


def read_beam_chat(directory: Path) -> Case:
    """One BEAM chat folder; ``chat_trunecated.json`` is read first when present, as upstream does."""
    truncated = directory / "chat_trunecated.json"
    chat = json.loads((truncated if truncated.exists() else directory / "chat.json").read_text())
    probing = json.loads((directory / "probing_questions.json").read_text())
    return Case(
        id=f"beam-{directory.name}",
        speakers=("user", "assistant"),
        sessions=_sessions(chat),
        questions=_questions(f"beam-{directory.name}", probing),
    )


def read_beam(root: Path) -> list[Case]:
    """Every chat folder under ``root`` (numeric names in numeric order)."""
    dirs = [d for d in root.iterdir() if (d / "probing_questions.json").exists()]
    dirs.sort(key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit() else 0, d.name))
    return [read_beam_chat(d) for d in dirs]
