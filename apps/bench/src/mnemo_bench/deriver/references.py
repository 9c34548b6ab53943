"""LoCoMo's reference facts: per session and speaker, ``observation`` with their ``dia_id``.

They are annotations of the dataset, never shown to the deriver; the offline Coverage counts
how many of them the deriver's observations state.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from mnemo_bench.mnemo_client import slug
from mnemo_bench.readers.locomo import parse_evidence

_KEY = re.compile(r"session_(\d+)_observation")


@dataclass(frozen=True)
class Reference:
    """One reference fact about ``speaker`` (a peer id) in one session."""

    case_id: str
    session_id: str
    speaker: str
    fact: str
    turn_ids: tuple[str, ...]


RefKey = tuple[str, str, str]  # case, session, speaker (the trace's key)


def read_references(path: Path) -> dict[RefKey, list[Reference]]:
    """Every reference fact of a LoCoMo file, by (case, session, speaker); malformed ones skipped."""
    out: dict[RefKey, list[Reference]] = {}
    for item in json.loads(path.read_text()):
        case = str(item["sample_id"])
        for key, by_speaker in (item.get("observation") or {}).items():
            m = _KEY.fullmatch(key)
            if m is None or not isinstance(by_speaker, dict):
                continue
            session = f"session-{int(m.group(1))}"
            for speaker, facts in by_speaker.items():
                for entry in facts if isinstance(facts, list) else []:
                    if not isinstance(entry, list) or not entry or not isinstance(entry[0], str):
                        continue
                    ref = Reference(
                        case,
                        session,
                        slug(str(speaker)),
                        entry[0].strip(),
                        parse_evidence(entry[1] if len(entry) > 1 else []),
                    )
                    out.setdefault((ref.case_id, ref.session_id, ref.speaker), []).append(ref)
    return out
