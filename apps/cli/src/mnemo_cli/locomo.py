"""Reading LoCoMo conversations (snap-research/LoCoMo JSON format)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path


@dataclass(frozen=True)
class Turn:
    speaker: str
    dia_id: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    started_at: datetime
    turns: list[Turn]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]


def datasets_dir() -> Path:
    """Where the benchmark data lives (MNEMO_DATASETS, default ../shared/datasets)."""
    return Path(os.environ.get("MNEMO_DATASETS", Path.cwd().parent / "shared" / "datasets"))


def parse_when(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> list[Conversation]:
    """Every conversation in a LoCoMo JSON file; sessions without turns are skipped."""
    out = []
    for item in json.loads(path.read_text()):
        conv = item["conversation"]
        sessions = []
        for key in conv:
            m = re.fullmatch(r"session_(\d+)", key)
            if not m or not conv[key]:
                continue
            n = int(m.group(1))
            turns = [Turn(t["speaker"], t["dia_id"], _text(t)) for t in conv[key] if _text(t)]
            sessions.append(Session(n, parse_when(conv[f"session_{n}_date_time"]), turns))
        sessions.sort(key=lambda s: s.number)
        out.append(Conversation(item["sample_id"], conv["speaker_a"], conv["speaker_b"], sessions))
    return out


def _text(turn: dict[str, str]) -> str:
    text = turn.get("text", "").strip()
    if caption := turn.get("blip_caption"):
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def turn_times(session: Session) -> list[datetime]:
    """One timestamp per turn: the session start plus a minute per turn, to keep order."""
    return [session.started_at + timedelta(minutes=i) for i in range(len(session.turns))]
