"""Composition of the judged run: SDK memory, answering and judging models, reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mnemo_bench.cases import Case, Question
from mnemo_bench.judge import JUDGE_STAGE, binary_request, nugget_request
from mnemo_bench.mnemo_client import client, drain, ingest, slug
from mnemo_bench.mnemo_retrieval import target_speaker
from mnemo_bench.offline_app import scope_for
from mnemo_bench.online import (
    ANSWER_STAGE,
    Answer,
    JudgedRun,
    answer_request,
    ask_model,
    transcript,
)
from mnemo_bench.report import judged_report
from mnemo_bench.state import RunState
from mnemo_runtime.models import ChatModel, ModelRequest
from mnemo_runtime.models.config import ModelChoice, ModelSettings, build_model
from mnemo_runtime.models.local import local_model
from mnemo_runtime.tokens import TokenCounter


class SdkMemory:
    """Mnemo through the honcho-ai SDK: the dialectic, or get_context plus one answering call."""

    def __init__(self, args: argparse.Namespace, state: RunState, answerer: ChatModel) -> None:
        self._url, self._benchmark, self._state = args.url, args.benchmark, state
        self._mode, self._level, self._answerer = args.mode, args.level, answerer
        self._count = TokenCounter()

    def load(self, case: Case) -> None:
        """Ingest once (recorded in state.json), then wait for the queue to drain."""
        honcho = client(self._url, self._benchmark, case)
        if self._state.ingested(case.id) is None:
            done = self._state.sessions_done(case.id)
            info = ingest(honcho, case, done, lambda s: self._state.mark_session(case.id, s))
            self._state.mark_ingested(case.id, info)
        drain(honcho, timeout_s=3600.0, label=case.id)

    async def answer(self, case: Case, question: Question) -> Answer:
        """Mnemo's answer, by the configured mode."""
        honcho = client(self._url, self._benchmark, case)
        peer = honcho.peer(slug(target_speaker(case, question)))
        if self._mode == "dialectic":
            text = peer.chat(question.text, reasoning_level=self._level) or ""
            return Answer(
                str(text), self._count.count(question.text) + self._count.count(str(text))
            )
        blob = honcho.session(slug(case.sessions[-1].id)).context(
            tokens=8000, peer_target=peer.id, search_query=question.text
        )
        material = "\n\n".join(
            [
                "Peer card: " + "; ".join(blob.peer_card or []),
                blob.peer_representation or "",
                f"Session summary: {blob.summary.content}" if blob.summary else "",
                "\n".join(f"{m.peer_id}: {m.content}" for m in blob.messages),
            ]
        )
        return await ask_model(self._answerer, material, question)


def _describe(request: ModelRequest, model: str) -> str:
    sizes = ", ".join(f"{m.role} {len(m.text())} chars" for m in request.messages)
    head = request.system[:70].replace("\n", " ")
    return (
        f"  model={model} stage={request.stage.value}\n    system: {head}...\n    messages: {sizes}"
    )


def dry_run(args: argparse.Namespace, cases: list[Case], settings: ModelSettings) -> None:
    """Print the requests a run would make, without calling Mnemo or any model."""
    scope = scope_for(args.benchmark, args.with_adversarial)
    answer_model = settings.choice(ANSWER_STAGE)
    judge_model = settings.choice(JUDGE_STAGE)
    for case in cases:
        q = next((q for q in case.questions if scope.includes_judged(q)), None)
        n = sum(1 for q in case.questions if scope.includes_judged(q))
        print(
            f"{case.id}: {sum(len(s.turns) for s in case.sessions)} messages to ingest "
            f"in {len(case.sessions)} sessions, {n} questions"
        )
        if q is None:
            continue
        print(f"  first question: {q.text!r}")
        if args.mode == "dialectic":
            print(f"  Mnemo: peer.chat(question, reasoning_level={args.level!r}) at {args.url}")
        else:
            print(f"  Mnemo: session.context(tokens=8000, ...) at {args.url}, then:")
            print(_describe(answer_request("<context blob>", q), answer_model.model))
        if not args.no_baseline:
            print("  baseline (full conversation):")
            print(_describe(answer_request(transcript(case), q), answer_model.model))
        judge = nugget_request(q, "<answer>") if q.rubric else binary_request(q, "<answer>")
        print("  judge (per answer):")
        print(_describe(judge, judge_model.model))


def model_settings(args: argparse.Namespace) -> ModelSettings:
    """The model configuration, with ``--answer-model`` / ``--judge-model`` applied."""
    settings = ModelSettings()
    overrides = {
        stage.value: ModelChoice.parse(choice)
        for stage, choice in ((ANSWER_STAGE, args.answer_model), (JUDGE_STAGE, args.judge_model))
        if choice
    }
    return settings.model_copy(update=overrides)


async def run_online(
    args: argparse.Namespace, cases: list[Case], out: Path
) -> dict[str, Any] | None:
    """The judged benchmark; with ``--dry-run`` only the requests it would make."""
    settings = model_settings(args)
    if args.dry_run:
        dry_run(args, cases, settings)
        return None
    if settings.default_provider() == "local":
        print(
            "no model key set: answering and judging use the local heuristic reasoner, "
            "which cannot judge; set ANTHROPIC_API_KEY",
            file=sys.stderr,
        )
    state = RunState(out)
    answerer = build_model(ANSWER_STAGE, settings, local_factory=local_model)
    judge = build_model(JUDGE_STAGE, settings, local_factory=local_model)
    run = JudgedRun(
        benchmark=args.benchmark,
        memory=SdkMemory(args, state, answerer),
        answerer=answerer,
        judge=judge,
        state=state,
        scope=scope_for(args.benchmark, args.with_adversarial),
        baseline=not args.no_baseline,
    )
    summary = await run.run(cases)
    summary |= {"benchmark": args.benchmark, "mode": args.mode, "level": args.level}
    judged_report(summary, out)
    return summary
