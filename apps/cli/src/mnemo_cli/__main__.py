"""The ``mnemo`` command."""

from __future__ import annotations

import os

# One BLAS thread per process: the embedder parallelises by worker instead, and BLAS's own
# threads contend with the event loop and with each other when several stages share the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import sys

from mnemo_runtime.settings import InfraSettings


def _positive_seconds(value: str) -> float:
    """A number of seconds above zero, or argparse's error naming the option."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0 and finite, not {value}")
    return seconds


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mnemo", description="Memory infrastructure for AI agents.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run services in this process (default: all)")
    s.add_argument(
        "--components",
        default=os.environ.get(
            "MNEMO_COMPONENTS",
            "projector,ingest,deriver,summarizer,dreamer,context,dialectic,gateway,grpc",
        ),
        help="comma-separated subset (env MNEMO_COMPONENTS)",
    )
    sub.add_parser("up", help="start NATS, Postgres and Mnemo locally (embedded default)")
    sub.add_parser("down", help="stop what `mnemo up` started")
    sub.add_parser("status", help="show what runs")
    r = sub.add_parser(
        "rebuild", help="drop the entity and message tables and rebuild them from the log"
    )
    r.add_argument(
        "--memory",
        action="store_true",
        help="the memory projections instead: observations, provenance, vectors, cards,"
        " summaries, dreams, message passages and their postings",
    )
    r.add_argument(
        "--progress-every",
        type=_positive_seconds,
        default=5.0,
        metavar="SECONDS",
        help="how often the replay's progress is written to stderr (default 5)",
    )
    sub.add_parser(
        "migrate",
        help="create or update the streams, stage consumers and database tables (idempotent)",
    )
    from mnemo_cli import dlq, keys

    keys.add_arguments(
        sub.add_parser("key", help="print the local admin key; mint keys; NATS users of agents")
    )

    dlq.add_arguments(sub.add_parser("dlq", help="dead letters: list, show, redrive, discard"))
    d = sub.add_parser("demo", help="ingest a LoCoMo conversation through the honcho-ai SDK")
    d.add_argument("--conversation", default="conv-26")
    d.add_argument("--sessions", type=int, default=100, help="at most this many sessions")
    from mnemo_bench.cli import add_arguments

    add_arguments(
        sub.add_parser("bench", help="run a quality benchmark (LoCoMo, LongMemEval, BEAM)")
    )
    from mnemo_train.cli import add_arguments as add_train_arguments

    add_train_arguments(
        sub.add_parser("train", help="build training data for / fine-tune a deriver")
    )
    from mnemo_cli import chaos

    chaos.add_arguments(
        sub.add_parser(
            "chaos",
            help="post a long conversation while killing and restarting the stack's processes,"
            " NATS and Postgres, then check nothing was lost",
        )
    )
    b = sub.add_parser("bench-perf", help="throughput and latency benchmarks; prints a table")
    b.add_argument("--seconds", type=float, default=10.0)
    b.add_argument("--clients", type=int, default=4)
    b.add_argument("--vectors", type=int, default=100_000, help="observations in the search bench")
    b.add_argument(
        "--write-path-only",
        action="store_true",
        help="skip the memory benchmarks and, on a stack it starts, the memory process",
    )
    b.add_argument(
        "--load",
        choices=("with", "only", "skip"),
        default="with",
        help="the figures under load (reads while messages pour in, memory formation, fairness):"
        " with the rest, only them, or skip them; their sizes: python -m mnemo_cli.bench_load -h",
    )
    return p


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    args = _parser().parse_args(argv)
    settings = InfraSettings()
    if args.command == "serve":
        import uvloop

        from mnemo_cli.serve import serve

        uvloop.run(serve([c for c in args.components.split(",") if c], settings))
    elif args.command in ("up", "down", "status"):
        from mnemo_cli import local

        getattr(local, args.command)(settings)
    elif args.command == "rebuild":
        from mnemo_cli.rebuild import rebuild

        asyncio.run(rebuild(settings, memory=args.memory, every_s=args.progress_every))
    elif args.command == "key":
        from mnemo_cli import keys

        sys.exit(keys.main(args, settings))
    elif args.command == "dlq":
        from mnemo_cli import dlq

        sys.exit(dlq.main(args, settings))
    elif args.command == "migrate":
        from mnemo_cli.migrate import migrate

        asyncio.run(migrate(settings))
    elif args.command == "demo":
        from mnemo_cli.demo import demo

        demo(args.conversation, args.sessions)
    elif args.command == "bench":
        from mnemo_bench.cli import main as bench_main

        sys.exit(bench_main(args))
    elif args.command == "train":
        from mnemo_train.cli import main as train_main

        sys.exit(train_main(args))
    elif args.command == "chaos":
        from mnemo_cli import chaos

        sys.exit(chaos.main(args, settings.state_dir))
    elif args.command == "bench-perf":
        from mnemo_cli.bench_perf import bench

        asyncio.run(
            bench(
                settings,
                seconds=args.seconds,
                clients=args.clients,
                vectors=args.vectors,
                memory=not args.write_path_only,
                load=args.load,
            )
        )
    else:  # pragma: no cover - argparse guards this
        sys.exit(2)


if __name__ == "__main__":
    main()
