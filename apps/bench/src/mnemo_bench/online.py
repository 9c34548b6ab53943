"""The judged run: Mnemo answers, a full-context baseline answers, a judge grades both."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mnemo_bench.cases import Case, Question
from mnemo_bench.judge import grade
from mnemo_bench.offline import Scope
from mnemo_bench.state import RunState
from mnemo_runtime.models import ChatModel, Message, ModelRequest, Stage

ANSWER_STAGE = Stage.DIALECTIC_MEDIUM

ANSWER_SYSTEM = """You answer questions about past conversations for the people in them. Use \
only the material given. Give the shortest complete answer; for dates, give the date itself. \
If the material does not contain the answer, say that you do not know."""


@dataclass(frozen=True)
class Answer:
    """An answer and what producing it cost in tokens (prompt + completion where known)."""

    text: str
    tokens: int = 0


class Memory(Protocol):
    """The system under test, seen from the benchmark."""

    def load(self, case: Case) -> None:
        """Make ``case`` known (ingest once, wait for memory to form)."""
        ...

    async def answer(self, case: Case, question: Question) -> Answer:
        """Mnemo's answer to ``question``."""
        ...


def transcript(case: Case) -> str:
    """The whole conversation as dated lines, for the full-context baseline."""
    lines: list[str] = []
    for s in case.sessions:
        lines.append(f"--- {s.id}" + (f" ({s.at:%d %B %Y})" if s.at else ""))
        lines += [f"{t.speaker}: {t.text}" for t in s.turns]
    return "\n".join(lines)


def answer_request(material: str, question: Question) -> ModelRequest:
    """One answering call over ``material`` (a transcript or a context blob)."""
    asked = f" (asked on {question.asked_at:%d %B %Y})" if question.asked_at else ""
    user = f"<material>\n{material}\n</material>\n\nQuestion{asked}: {question.text}"
    return ModelRequest(
        stage=ANSWER_STAGE, system=ANSWER_SYSTEM, messages=(Message.user(user),), max_tokens=512
    )


async def ask_model(model: ChatModel, material: str, question: Question) -> Answer:
    """The answering model's answer over ``material``."""
    response = await model.complete(answer_request(material, question))
    return Answer(response.text, response.usage.input_tokens + response.usage.output_tokens)


@dataclass
class JudgedRun:
    """Everything one judged run needs; the ports are fakes in tests, the SDK and LLMs here."""

    benchmark: str
    memory: Memory
    answerer: ChatModel
    judge: ChatModel
    state: RunState
    scope: Scope
    baseline: bool = True

    async def run(self, cases: Sequence[Case]) -> dict[str, Any]:
        """Answer and grade every in-scope question, skipping those already recorded."""
        for n, case in enumerate(cases, 1):
            todo = [
                q
                for q in case.questions
                if self.scope.includes_judged(q) and self.state.result(q.id) is None
            ]
            if not todo:
                continue
            self.memory.load(case)
            full = transcript(case) if self.baseline else ""
            for i, q in enumerate(todo, 1):
                self.state.append(await self._one(case, q, full))
                print(
                    f"\r  [{n}/{len(cases)}] {case.id} {i}/{len(todo)}",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
            print(file=sys.stderr)
        return judged_summary(self.state.rows(), self.baseline)

    async def _one(self, case: Case, q: Question, full: str) -> dict[str, Any]:
        mnemo = await self.memory.answer(case, q)
        row: dict[str, Any] = {
            "key": q.id,
            "case": case.id,
            "question": q.text,
            "category": q.category,
            "reference": q.answer,
            "mnemo_answer": mnemo.text,
            "mnemo_tokens": mnemo.tokens,
            "mnemo_score": await grade(self.judge, self.benchmark, q, mnemo.text),
        }
        if self.baseline:
            base = await ask_model(self.answerer, full, q)
            row |= {
                "baseline_answer": base.text,
                "baseline_tokens": base.tokens,
                "baseline_score": await grade(self.judge, self.benchmark, q, base.text),
            }
        return row


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def judged_summary(rows: Sequence[dict[str, Any]], baseline: bool) -> dict[str, Any]:
    """Mnemo, baseline and delta per question type and overall, with tokens per question."""

    def block(part: Sequence[dict[str, Any]]) -> dict[str, float]:
        out = {
            "questions": float(len(part)),
            "mnemo": _mean([r["mnemo_score"] for r in part]),
            "mnemo_tokens": _mean([r["mnemo_tokens"] for r in part]),
        }
        if baseline:
            out["baseline"] = _mean([r.get("baseline_score", 0.0) for r in part])
            out["baseline_tokens"] = _mean([r.get("baseline_tokens", 0) for r in part])
            out["delta"] = out["mnemo"] - out["baseline"]
        return out

    categories = sorted({str(r["category"]) for r in rows})
    return {
        "overall": block(rows),
        "by_type": {c: block([r for r in rows if str(r["category"]) == c]) for c in categories},
        "questions": len(rows),
    }
