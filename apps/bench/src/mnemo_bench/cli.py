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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``mnemo bench``."""
    parser.add_argument("benchmark", choices=["locomo", "longmemeval", "beam", "deriver"])
    parser.add_argument("--offline", action="store_true",
                        help="retrieval metrics only (Recall@k, NDCG@k); no answering model")  # fmt: skip
    parser.add_argument("--data", type=Path, help="dataset file or folder (default: shared data)")
    parser.add_argument("--out", type=Path, help="output folder (default: bench-out/<benchmark>)")
    parser.add_argument("--limit", type=int, help="first N conversations (LongMemEval: questions)")
    parser.add_argument("--questions", type=int, help="first N questions of each conversation")
    parser.add_argument("--level", default="low",
                        choices=["minimal", "low", "medium", "high", "max"])  # fmt: skip
    parser.add_argument("--mode", default="dialectic", choices=["dialectic", "context"])
    parser.add_argument("--url", default=os.environ.get("MNEMO_URL", DEFAULT_URL))
    parser.add_argument("--dry-run", action="store_true",
                        help="print the model requests the run would make; call no model")  # fmt: skip
    parser.add_argument("--with-adversarial", action="store_true",
                        help="LoCoMo: also score category 5")  # fmt: skip
    parser.add_argument("--answer-model", help="provider[:model] answering (default: model config)")
    parser.add_argument("--judge-model", help="provider[:model] judging (default: model config)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the full-context baseline")  # fmt: skip
    parser.add_argument("--no-mnemo", action="store_true",
                        help="offline: raw-message baselines only")  # fmt: skip
    parser.add_argument("--corpus", default="locomo", choices=["locomo", "longmemeval", "beam"],
                        help="deriver: whose conversations the deriver reads")  # fmt: skip
    parser.add_argument("--deriver-model", help="deriver: provider[:model] (default: model config)")


def default_data(benchmark: str) -> Path:
    """``$MNEMO_DATASETS`` or ``../shared/datasets``, joined with the benchmark's usual file."""
    root = Path(os.environ.get("MNEMO_DATASETS", Path.cwd().parent / "shared" / "datasets"))
    return root / DEFAULT_DATA[benchmark]


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
        cases = [
            Case(c.id, c.speakers, c.sessions, c.questions[:per_case]) for c in cases
        ]  # fmt: skip
    return cases


def main(args: argparse.Namespace) -> int:
    """Run the benchmark chosen in ``args``; the process exit code."""
    source = args.corpus if args.benchmark == "deriver" else args.benchmark
    data = args.data = args.data or default_data(source)
    out: Path = args.out or Path("bench-out") / (
        f"deriver-{source}" if args.benchmark == "deriver" else args.benchmark
    )
    cases = load_cases(source, data, args.limit, args.questions)
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
