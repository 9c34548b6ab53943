"""``mnemo bench <locomo|longmemeval|beam|deriver>``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from mnemo_bench.cases import Case
from mnemo_bench.readers import read_beam, read_locomo, read_longmemeval

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_DATA = {
    "locomo": "locomo/locomo-dev5.json",
    "beam": "beam-100k",
    "longmemeval": "longmemeval/longmemeval_s.json",
}
# The development data's fixed halves: weights and thresholds are fitted on "tuning" only, and
# "held-out" shows whether what was fitted carries over. Other data is "all" of it.
SPLITS: dict[str, dict[str, tuple[str, ...]]] = {
    "locomo": {"tuning": ("conv-26", "conv-30"), "held-out": ("conv-41", "conv-42", "conv-43")},
    "beam": {
        "tuning": tuple(f"beam-{i}" for i in range(1, 6)),
        "held-out": tuple(f"beam-{i}" for i in range(6, 11)),
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemo bench``."""
    parser.add_argument("benchmark", choices=["locomo", "longmemeval", "beam", "deriver"])
    parser.add_argument(
        "--offline",
        action="store_true",
        help="retrieval metrics only (Recall@k, NDCG@k); no answering model",
    )
    parser.add_argument("--data", type=Path, help="dataset file or folder (default: shared data)")
    parser.add_argument("--out", type=Path, help="output folder (default: bench-out/<benchmark>)")
    parser.add_argument("--limit", type=int, help="first N conversations (LongMemEval: questions)")
    parser.add_argument("--questions", type=int, help="first N questions of each conversation")
    parser.add_argument(
        "--level", default="low", choices=["minimal", "low", "medium", "high", "max"]
    )
    parser.add_argument("--mode", default="dialectic", choices=["dialectic", "context"])
    parser.add_argument(
        "--url",
        help="Mnemo's gateway (default: MNEMO_URL, else the stack "
        "`make up` started, else " + DEFAULT_URL + ")",
    )
    parser.add_argument(
        "--split",
        default="all",
        choices=["all", "tuning", "held-out"],
        help="LoCoMo / BEAM: the tuning or the held-out half of the dev data",
    )
    parser.add_argument(
        "--no-ablation",
        dest="ablation",
        action="store_false",
        help="offline: skip the runs with one engine component off",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the model requests the run would make; call no model",
    )
    parser.add_argument(
        "--with-adversarial", action="store_true", help="LoCoMo: also score category 5"
    )
    parser.add_argument("--answer-model", help="provider[:model] answering (default: model config)")
    parser.add_argument("--judge-model", help="provider[:model] judging (default: model config)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the full-context baseline")
    parser.add_argument(
        "--no-mnemo", action="store_true", help="offline: raw-message baselines only"
    )
    parser.add_argument(
        "--corpus",
        default="locomo",
        choices=["locomo", "longmemeval", "beam"],
        help="deriver: whose conversations the deriver reads",
    )
    parser.add_argument("--deriver-model", help="deriver: provider[:model] (default: model config)")


def default_data(benchmark: str) -> Path:
    """``$MNEMO_DATASETS`` or ``../shared/datasets``, joined with the benchmark's usual file."""
    root = Path(os.environ.get("MNEMO_DATASETS", Path.cwd().parent / "shared" / "datasets"))
    return root / DEFAULT_DATA[benchmark]


def gateway(given: str | None) -> str:
    """``--url``, else MNEMO_URL, else the gateway ``mnemo up`` recorded, else the default."""
    from mnemo_runtime.settings import InfraSettings
    from mnemo_runtime.stack import recorded_stack

    recorded = recorded_stack(InfraSettings().state_dir).get("gateway_url")
    return given or os.environ.get("MNEMO_URL") or recorded or DEFAULT_URL


def split_cases(benchmark: str, cases: list[Case], split: str) -> list[Case]:
    """The cases of ``split`` ("all": every case)."""
    if split == "all":
        return cases
    wanted = SPLITS.get(benchmark, {}).get(split)
    if wanted is None:
        raise SystemExit(f"{benchmark} has no {split} split; use --split all")
    return [c for c in cases if c.id in wanted]


def load_cases(benchmark: str, path: Path, limit: int | None, per_case: int | None) -> list[Case]:
    """The benchmark's cases, sliced by ``--limit`` and ``--questions``."""
    if not path.exists():
        raise SystemExit(f"no {benchmark} data at {path} (set --data or MNEMO_DATASETS)")
    if benchmark == "locomo":
        cases = read_locomo(path)
    elif benchmark == "beam":
        cases = read_beam(path)
    else:
        cases = read_longmemeval(path)
    cases = cases[:limit] if limit else cases
    if per_case:
        cases = [Case(c.id, c.speakers, c.sessions, c.questions[:per_case]) for c in cases]
    return cases


def main(args: argparse.Namespace) -> int:
    """Run the benchmark chosen in ``args``; the process exit code."""
    source = args.corpus if args.benchmark == "deriver" else args.benchmark
    data = args.data = args.data or default_data(source)
    out: Path = args.out or Path("bench-out") / (
        f"deriver-{source}" if args.benchmark == "deriver" else args.benchmark
    )
    if args.benchmark == "deriver":
        # The deriver's bench splits its conversations itself (tuning / held-out).
        cases = load_cases(source, data, args.limit, args.questions)
    else:
        args.url = gateway(args.url)
        cases = split_cases(
            args.benchmark, load_cases(args.benchmark, data, None, None), args.split
        )
        cases = cases[: args.limit] if args.limit else cases
        if args.questions:
            cases = [
                Case(c.id, c.speakers, c.sessions, c.questions[: args.questions]) for c in cases
            ]
    summary: dict[str, object] | None
    if args.benchmark == "deriver":
        from mnemo_bench.deriver import app

        run = app.run_offline if args.offline else app.run_judged
        summary = asyncio.run(run(args, cases, out))
    elif args.offline:
        from mnemo_bench.offline_app import run_offline

        summary = asyncio.run(run_offline(args, cases, out))
    else:
        from mnemo_bench.online_app import run_online

        summary = asyncio.run(run_online(args, cases, out))
    if summary is not None:
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        print(f"\nwrote {out / 'summary.json'}")
    return 0
