"""Tables of the deriver benchmark: per conversation, per split, overall; the worst observations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _cell(v: object) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def table(rows: Mapping[str, Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A markdown table: one row per key of ``rows``, the given columns."""
    lines = [
        "| | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for name, row in rows.items():
        lines.append(f"| {name} | " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    return "\n".join(lines)


OFFLINE_COLUMNS = (
    "gold",
    "covered",
    "partial",
    "R",
    "R_w",
    "F1",
    "grounding_precision",
    "kept",
    "messages",
    "observations_per_message",
    "malformed_batches",
)

JUDGED_COLUMNS = (
    "gold",
    "R",
    "R_w",
    "F1",
    "observations",
    "quality",
    "redundant",
    "fixated",
    "temporal",
    "molecular",
    "faults",
)


def worst_list(worst: Sequence[Mapping[str, Any]], n: int = 20) -> str:
    """The ``n`` worst observations: most flags first, then lowest Molecular."""
    ranked = sorted(
        worst, key=lambda w: (-len(w["flags"]), w["mol"] if w["mol"] is not None else 1)
    )
    lines = [f"Worst observations ({min(n, len(ranked))} of {len(ranked)} flagged or ill-formed):"]
    for w in ranked[:n]:
        mol = "n/a" if w["mol"] is None else f"{w['mol']:.2f}"
        lines.append(
            f"- {w['unit']}: {w['observation']!r} flags={','.join(w['flags']) or '-'} mol={mol}"
        )
    return "\n".join(lines)
