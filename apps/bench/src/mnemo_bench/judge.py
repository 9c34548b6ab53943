"""LLM judges: a binary correctness judge (LoCoMo, LongMemEval) and BEAM's nugget judge."""

from __future__ import annotations

from pydantic import BaseModel, Field

from mnemo_bench.cases import Question
from mnemo_bench.ordering import ordering_score
from mnemo_runtime.models import ChatModel, Message, ModelRequest, Stage, structured

JUDGE_STAGE = Stage.DIALECTIC_LOW

BINARY_SYSTEM = """You grade answers produced by Mnemo, a memory system for AI agents, on a \
long-term conversational memory benchmark. You see a question about past conversations, the \
reference answer and the system's answer. Mark the answer correct when it states the same facts \
as the reference: wording, extra detail and formatting do not matter; dates may be written \
differently or relative to the conversation if they denote the same day, month or year the \
reference gives. Mark it incorrect when it contradicts the reference, misses its key fact, or \
hedges between several candidates."""

ABSTENTION_SYSTEM = """You grade answers produced by Mnemo, a memory system for AI agents. The \
question cannot be answered from the conversations: the right behaviour is to say the \
information is not available (or that the premise is wrong). Mark the answer correct when it \
declines or says it does not know; incorrect when it asserts an answer."""

NUGGET_SYSTEM = """You grade answers produced by Mnemo, a memory system for AI agents, on the \
BEAM benchmark. You see a question, the answer, and a rubric of nuggets the answer should \
satisfy. Score every nugget: 1 if the answer fully satisfies it, 0.5 if partly (vague, \
incomplete, or only implied), 0 if it is missing or contradicted. Return one score per nugget, \
in the rubric's order."""

ORDER_SYSTEM = """You read an answer that lists events in some order, and a list of reference \
events. For each position of the answer's order, name the reference events mentioned there, \
copied exactly as written in the reference list. Leave out events the answer does not mention; \
put two reference events in one position only if the answer presents them as simultaneous."""


class Verdict(BaseModel):
    """The judge's verdict on one answer."""

    reasoning: str = Field(description="one or two sentences on why")
    correct: bool


class NuggetScores(BaseModel):
    """One score per rubric nugget, in order."""

    scores: list[float] = Field(description="1, 0.5 or 0 per nugget")


class ExtractedOrder(BaseModel):
    """Reference events in the order the answer gives them; a position may hold ties."""

    order: list[list[str]]


def _request(system: str, user: str) -> ModelRequest:
    return ModelRequest(
        stage=JUDGE_STAGE, system=system, messages=(Message.user(user),), max_tokens=1024
    )


def binary_request(question: Question, answer: str) -> ModelRequest:
    """The request the binary judge sends for ``answer``."""
    if question.abstention:
        user = f"Question: {question.text}\nSystem answer: {answer}"
        return _request(ABSTENTION_SYSTEM, user)
    user = (
        f"Question: {question.text}\nReference answer: {question.answer}\nSystem answer: {answer}"
    )
    return _request(BINARY_SYSTEM, user)


async def judge_binary(model: ChatModel, question: Question, answer: str) -> float:
    """1.0 when the judge finds ``answer`` correct, else 0.0."""
    verdict = await structured(model, binary_request(question, answer), Verdict)
    return 1.0 if verdict.correct else 0.0


def nugget_request(question: Question, answer: str) -> ModelRequest:
    """The request the nugget judge sends for ``answer``."""
    rubric = "\n".join(f"{i}. {r}" for i, r in enumerate(question.rubric, 1))
    user = f"Question: {question.text}\nAnswer: {answer}\nRubric:\n{rubric}"
    return _request(NUGGET_SYSTEM, user)


def nugget_score(scores: list[float], expected: int) -> float:
    """Mean nugget score; nuggets the judge left unscored count as 0."""
    if expected == 0:
        return 0.0
    padded = [*scores[:expected], *[0.0] * max(0, expected - len(scores))]
    return sum(padded) / expected


async def judge_nuggets(model: ChatModel, question: Question, answer: str) -> float:
    """BEAM's rubric score of ``answer``; event ordering is scored by tau-b times F1."""
    if question.ordering:
        events = "\n".join(f"- {e}" for e in question.ordering)
        user = f"Reference events:\n{events}\n\nAnswer:\n{answer}"
        order = await structured(model, _request(ORDER_SYSTEM, user), ExtractedOrder)
        return ordering_score(question.ordering, order.order)
    result = await structured(model, nugget_request(question, answer), NuggetScores)
    return nugget_score([float(s) for s in result.scores], len(question.rubric))


async def grade(model: ChatModel, benchmark: str, question: Question, answer: str) -> float:
    """The benchmark's score of ``answer`` in [0, 1]."""
    if benchmark == "beam" and question.rubric:
        return await judge_nuggets(model, question, answer)
    return await judge_binary(model, question, answer)
