"""``mnemo train deriver-data`` and ``mnemo train deriver-sft``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from mnemo_deriver.local import local_deriver
from mnemo_runtime.models import ChatModel, Stage
from mnemo_runtime.models.config import ModelChoice, ModelSettings, build_model
from mnemo_runtime.models.local import local_model
from mnemo_train.agreement import JUDGE_STAGE, KAPPA_THRESHOLD


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``train`` subcommands."""
    sub = parser.add_subparsers(dest="train", required=True)
    d = sub.add_parser("deriver-data", help="build grounded SFT data for the deriver from a corpus")
    d.add_argument("--corpus", type=Path, required=True, help="conversations, one JSON a line")
    d.add_argument("--out", type=Path, required=True, help="output folder (resumed if present)")
    d.add_argument(
        "--benchmarks",
        type=Path,
        help="benchmark data to decontaminate against (default: MNEMO_DATASETS)",
    )
    d.add_argument("--teacher-model", help="provider[:model] (default: the deriver's model config)")
    d.add_argument("--judge-a", help="provider[:model] of the first judge")
    d.add_argument("--judge-b", help="provider[:model] of the second judge")
    d.add_argument("--no-judges", action="store_true", help="skip stage 7 (recorded in the report)")
    d.add_argument("--budget", type=int, help="at most this many conversations, across strata")
    d.add_argument("--kappa-threshold", type=float, default=KAPPA_THRESHOLD)
    d.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("deriver-sft", help="fine-tune a causal LM on deriver SFT records")
    s.add_argument("--data", type=Path, required=True, help="sft.jsonl from deriver-data")
    s.add_argument("--model", required=True, help="a local model folder (weights and tokenizer)")
    s.add_argument("--out", type=Path, required=True, help="where the checkpoint is saved")
    s.add_argument("--epochs", type=int, default=1)
    s.add_argument("--lr", type=float, default=2e-5)
    s.add_argument("--max-length", type=int, default=4096)


def _model(stage: Stage, choice: str | None) -> ChatModel:
    settings = ModelSettings()
    if choice:
        settings = settings.model_copy(update={stage.value: ModelChoice.parse(choice)})
    # Offline, the teacher is the local reasoner's deriver; no other stage has a local skill.
    local = local_deriver if stage is Stage.DERIVER else local_model
    return build_model(stage, settings, local_factory=local)


def _data(args: argparse.Namespace) -> int:
    from mnemo_train.pipeline import Options, Pipeline

    judges: tuple[ChatModel, ChatModel] | None = None
    if not args.no_judges:
        if (
            not (args.judge_a and args.judge_b)
            and ModelSettings().choice(JUDGE_STAGE).provider == "local"
        ):
            print(
                "stage 7 needs two judge models (--judge-a, --judge-b, or a provider key); "
                "--no-judges skips it",
                file=sys.stderr,
            )
            return 2
        if args.judge_a == args.judge_b:
            print(
                "warning: both judges are the same model; their agreement says little",
                file=sys.stderr,
            )
        judges = (_model(JUDGE_STAGE, args.judge_a), _model(JUDGE_STAGE, args.judge_b))
    root = args.benchmarks or Path(
        os.environ.get("MNEMO_DATASETS", Path.cwd().parent / "shared" / "datasets")
    )
    options = Options(
        benchmarks=root, budget=args.budget, seed=args.seed, kappa_threshold=args.kappa_threshold
    )
    pipeline = Pipeline(args.out, options, _model(Stage.DERIVER, args.teacher_model), judges)
    report = asyncio.run(pipeline.run(args.corpus))
    for name, counts in report["stages"].items():
        shown = {k: v for k, v in counts.items() if k not in ("examples", "dropped_list", "done")}
        print(f"{name}: {json.dumps(shown)}")
    print(f"status: {report['status']}; report: {args.out / 'report.json'}")
    return 0 if report["status"] == "accepted" else 1


def _sft(args: argparse.Namespace) -> int:
    try:
        from mnemo_train.sft import SftOptions, train
    except ImportError as err:
        print(
            f"deriver-sft needs torch and transformers ({err.name} is missing): "
            "make train-env, then .venv-train/bin/mnemo train deriver-sft ...",
            file=sys.stderr,
        )
        return 2
    result = train(
        args.model,
        args.data,
        args.out,
        SftOptions(epochs=args.epochs, lr=args.lr, max_length=args.max_length),
    )
    print(json.dumps(result, indent=2))
    return 0


def main(args: argparse.Namespace) -> int:
    """Run the chosen ``train`` subcommand; the exit code."""
    return _data(args) if args.train == "deriver-data" else _sft(args)
