"""Resumable progress in the output folder: ingested cases in state.json, results in JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RunState:
    """What a run has done so far, so a crashed run resumes without redoing it."""

    def __init__(self, out: Path, results_name: str = "questions.jsonl") -> None:
        out.mkdir(parents=True, exist_ok=True)
        self._state_path = out / "state.json"
        self.results_path = out / results_name
        self._state: dict[str, Any] = (
            json.loads(self._state_path.read_text()) if self._state_path.exists() else {}
        )
        self._done: dict[str, dict[str, Any]] = {}
        if self.results_path.exists():
            text = self.results_path.read_text()
            if text and not text.endswith("\n"):
                # End the cut line so the next row starts on a line of its own.
                with self.results_path.open("a") as f:
                    f.write("\n")
            for line in text.splitlines():
                # A line cut short by a crash is ignored; its question is simply redone.
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                self._done[row["key"]] = row

    def ingested(self, case_id: str) -> dict[str, Any] | None:
        """What was recorded when ``case_id`` was ingested, or None."""
        value = self._state.get("ingested", {}).get(case_id)
        return value if isinstance(value, dict) else None

    def mark_ingested(self, case_id: str, info: dict[str, Any]) -> None:
        """Record ``case_id`` as ingested (written to disk at once)."""
        self._state.setdefault("ingested", {})[case_id] = info
        self._save()

    def _save(self) -> None:
        tmp = self._state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._state, indent=2))
        tmp.replace(self._state_path)

    def sessions_done(self, case_id: str) -> list[str]:
        """Sessions of ``case_id`` already ingested by an interrupted run."""
        value = self._state.get("sessions", {}).get(case_id, [])
        return [str(v) for v in value] if isinstance(value, list) else []

    def mark_session(self, case_id: str, session_id: str) -> None:
        """Record one session of ``case_id`` as ingested."""
        self._state.setdefault("sessions", {}).setdefault(case_id, []).append(session_id)
        self._save()

    def result(self, key: str) -> dict[str, Any] | None:
        """The recorded row for ``key``, if already done."""
        return self._done.get(key)

    def append(self, row: dict[str, Any]) -> None:
        """Record one result row; ``row["key"]`` identifies it."""
        with self.results_path.open("a") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._done[row["key"]] = row

    def rows(self) -> list[dict[str, Any]]:
        """Every recorded row, in the order first recorded."""
        return list(self._done.values())
