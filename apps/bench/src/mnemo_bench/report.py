"""Tables and charts of results: markdown for humans, SVG for a glance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from mnemo_bench.metrics import KS


def retrieval_table(summary: dict[str, Any]) -> str:
    """Markdown table of Recall@k / NDCG@k and tokens per retriever, then skipped ones."""
    cols = [f"recall@{k}" for k in KS] + [f"ndcg@{k}" for k in KS] + ["recall@all"]
    split = summary.get("split", "all")
    cases = ", ".join(summary.get("cases", []))
    lines = [
        f"{summary.get('benchmark', '')} retrieval, {summary['questions']} questions"
        + (f" ({split} split: {cases})" if split != "all" else ""),
        "",
        "| retriever | "
        + " | ".join(c.replace("recall", "R").replace("ndcg", "NDCG") for c in cols)
        + " | tokens/q |",
        "|---" * (len(cols) + 2) + "|",
    ]
    for name, m in summary["retrievers"].items():
        if name.startswith("mnemo without "):
            continue  # in the ablation table
        cells = " | ".join(f"{m.get(c, 0.0):.3f}" for c in cols)
        lines.append(f"| {name} | {cells} | {m.get('tokens', 0.0):.0f} |")
    lines.append(
        "\nR@all: recall over everything returned (a context blob is not ranked). tokens/q: what "
        "the top 20 (Mnemo: its fused hits; context: the whole blob) costs in the prompt."
    )
    for name, why in summary.get("skipped", {}).items():
        lines.append(f"\n{name}: skipped ({why})")
    return "\n".join(lines)


def _ranked(name: str) -> bool:
    return not name.startswith("context@")


def category_table(summary: dict[str, Any]) -> str:
    """Markdown table of Recall@10 per category (LoCoMo) or ability (BEAM) and retriever; a
    context blob by R@all (it is not ranked)."""
    by_cat: dict[str, dict[str, dict[str, float]]] = summary.get("by_category", {})
    names = [n for n in summary.get("retrievers", {}) if not n.startswith("mnemo without")]
    if not by_cat or not names:
        return ""
    cats = sorted({c for per in by_cat.values() for c in per})
    heads = [f"{n} {'R@10' if _ranked(n) else 'R@all'}" for n in names]
    lines = [
        "By category (LoCoMo) / ability (BEAM)",
        "",
        "| category | n | " + " | ".join(heads) + " |",
        "|---" * (len(names) + 2) + "|",
    ]
    for cat in cats:
        n = max(int(by_cat[r].get(cat, {}).get("questions", 0)) for r in names if r in by_cat)
        cells = []
        for r in names:
            m = by_cat.get(r, {}).get(cat)
            key = "recall@10" if _ranked(r) else "recall@all"
            cells.append("" if m is None else f"{m.get(key, 0.0):.3f}")
        lines.append(f"| {cat} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ablation_table(summary: dict[str, Any]) -> str:
    """Markdown table of the engine whole and with each component off, and what each earns."""
    runs: dict[str, dict[str, float]] = summary.get("retrievers", {})
    whole = runs.get("mnemo")
    ablated = {n: m for n, m in runs.items() if n.startswith("mnemo without ")}
    if whole is None or not ablated:
        return ""
    cols = ["recall@5", "recall@10", "recall@20", "ndcg@10"]
    lines = [
        "Ablation: the engine with one component switched off",
        "",
        "| engine | R@5 | R@10 | R@20 | NDCG@10 | R@10 change |",
        "|---|---|---|---|---|---|",
        "| all components | " + " | ".join(f"{whole.get(c, 0.0):.3f}" for c in cols) + " | |",
    ]
    for name, m in ablated.items():
        delta = m.get("recall@10", 0.0) - whole.get("recall@10", 0.0)
        cells = " | ".join(f"{m.get(c, 0.0):.3f}" for c in cols)
        lines.append(f"| without {name.removeprefix('mnemo without ')} | {cells} | {delta:+.3f} |")
    return "\n".join(lines)


def bar_chart_svg(title: str, groups: Sequence[str], series: Mapping[str, Sequence[float]]) -> str:
    """A grouped bar chart (values in 0..1) as a standalone SVG document."""
    colours = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2"]
    bar, gap, height, left, top = 18, 14, 220, 40, 30
    group_w = bar * max(len(series), 1) + gap
    width = left + group_w * max(len(groups), 1) + 160
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 90}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="18" font-size="14">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + height}" x2="{width - 150}" y2="{top + height}" '
        'stroke="#333"/>',
    ]
    for gi, group in enumerate(groups):
        x0 = left + gi * group_w
        for si, values in enumerate(series.values()):
            v = max(0.0, min(1.0, values[gi] if gi < len(values) else 0.0))
            h = v * height
            x = x0 + si * bar
            parts.append(
                f'<rect x="{x}" y="{top + height - h:.1f}" width="{bar - 2}" height="{h:.1f}" '
                f'fill="{colours[si % len(colours)]}"><title>{v:.3f}</title></rect>'
            )
        parts.append(
            f'<text x="{x0}" y="{top + height + 14}" transform="rotate(30 {x0} '
            f'{top + height + 14})">{escape(group)}</text>'
        )
    for si, name in enumerate(series):
        y = top + 14 * si
        parts.append(
            f'<rect x="{width - 140}" y="{y}" width="10" height="10" '
            f'fill="{colours[si % len(colours)]}"/>'
            f'<text x="{width - 125}" y="{y + 9}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def judged_table(summary: dict[str, Any]) -> str:
    """Markdown table of Mnemo vs the full-context baseline by question type."""
    lines = [
        "| type | n | Mnemo | baseline | delta | Mnemo tokens/q | baseline tokens/q |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = [*summary["by_type"].items(), ("overall", summary["overall"])]
    for name, b in rows:
        lines.append(
            f"| {name} | {b['questions']:.0f} | {b['mnemo']:.3f} | {b.get('baseline', 0.0):.3f} "
            f"| {b.get('delta', 0.0):+.3f} | {b['mnemo_tokens']:.0f} "
            f"| {b.get('baseline_tokens', 0.0):.0f} |"
        )
    return "\n".join(lines)


def judged_report(summary: dict[str, Any], out: Path) -> None:
    """Write report.md and chart.svg for a judged run, and print the table."""
    table = judged_table(summary)
    title = f"{summary.get('benchmark', '')}: Mnemo vs full-context baseline"
    (out / "report.md").write_text(f"# {title}\n\n{table}\n")
    types = list(summary["by_type"])
    series = {"Mnemo": [summary["by_type"][t]["mnemo"] for t in types]}
    if "baseline" in summary["overall"]:
        series["baseline"] = [summary["by_type"][t]["baseline"] for t in types]
    (out / "chart.svg").write_text(bar_chart_svg(title, types, series))
    print(table)
