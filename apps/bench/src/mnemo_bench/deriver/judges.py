"""The deriver's LLM judges: gold facts, their coverage, validity flags, well-formedness.

Each judge answers through a schema-constrained tool (``structured``); an answer that keeps
failing its schema raises ``MalformedOutput``, which the run counts and reports per unit.
Observations and gold facts are numbered in the prompt and referred to by number.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from mnemo_bench.deriver.scores import Importance, Label
from mnemo_bench.deriver.traces import Trace
from mnemo_runtime.models import Message, ModelRequest, Stage

JUDGE_STAGE = Stage.DIALECTIC_LOW

_ABOUT = """You evaluate the deriver of Mnemo, a memory system for AI agents. The deriver reads \
a conversation and writes observations: atomic, self-contained, explicit facts about one \
person, the target, each taken from a message the target wrote."""

GOLD_SYSTEM = f"""{_ABOUT}

Read the conversation and list every explicit fact it states about the target: what the target \
says about themselves (identity, work, places, relationships, possessions, events, plans, \
preferences, opinions, feelings), one atomic claim each, in the third person. Leave out what \
only other speakers say, greetings and small talk. Tag each fact's importance:
- critical: core identifying information (name, occupation, location, key relationships);
- important: significant details that build a clear picture of the target;
- minor: useful but nonessential details;
- trivial: marginal information."""

COVERAGE_SYSTEM = f"""{_ABOUT}

You see numbered gold facts about the target and the deriver's numbered observations. Label \
every gold fact exactly once: covered when some observation states it (wording may differ; \
dates may be resolved), partial when observations state part of it or state it vaguely, \
missing otherwise. Name the observations that cover it."""

QUALITY_SYSTEM = f"""{_ABOUT}

Check each numbered observation against the conversation and set a flag only when it applies:
- hallucination: the conversation does not state it;
- over_inference: it goes beyond what was said (guesses, generalises, diagnoses);
- attribution_failure: it is not about the target, or does not say whom it is about;
- misattribution: it gives the target what another speaker said, did or owns;
- misframing: it distorts the stance (a wish as a fact, a joke as earnest, a question as a claim);
- meta_conversational: it is about the conversation itself, not about the target;
- tautology: it is empty or self-evident.
Then check the set: groups of observations that state the same fact (redundancy), observations \
that dwell on one topic out of proportion to the conversation (topical fixation), and \
observations whose dates or tenses are wrong for the message's time (temporal confusion)."""

MOLECULAR_SYSTEM = f"""{_ABOUT}

Score each numbered observation on two scales from 0.0 to 1.0, judging form, not truth:
- decontextuality: 1 when a reader who never saw the conversation understands it fully (names \
instead of pronouns, no "this" or "that" without a referent, dates resolved); 0 when it cannot \
be understood alone;
- minimality: 1 when it states exactly one claim; lower the more claims it joins."""


class GoldFact(BaseModel):
    fact: str
    importance: Importance


class GoldFacts(BaseModel):
    """The explicit facts about the target the conversation states."""

    facts: list[GoldFact]


class CoverageLabel(BaseModel):
    gold: int = Field(description="the gold fact's number")
    label: Label
    observations: list[int] = Field(default_factory=list)


class CoverageLabels(BaseModel):
    """One label per gold fact."""

    labels: list[CoverageLabel]


class ObservationFlags(BaseModel):
    observation: int = Field(description="the observation's number")
    hallucination: bool
    over_inference: bool
    attribution_failure: bool
    misattribution: bool
    misframing: bool
    meta_conversational: bool
    tautology: bool


class QualityVerdict(BaseModel):
    """Flags per observation, and the set-level checks naming the observations involved."""

    observations: list[ObservationFlags]
    redundancy: list[list[int]] = Field(default_factory=list)
    topical_fixation: list[int] = Field(default_factory=list)
    temporal_confusion: list[int] = Field(default_factory=list)


class Form(BaseModel):
    observation: int
    decontextuality: float = Field(ge=0.0, le=1.0)
    minimality: float = Field(ge=0.0, le=1.0)


class MolecularScores(BaseModel):
    """Decontextuality and minimality per observation."""

    observations: list[Form]


def transcript(trace: Trace) -> str:
    """The session as the judge reads it, target marked."""
    lines = [f"Target: {trace.target}"]
    for m in trace.messages:
        mark = " (target)" if m.speaker == trace.target else ""
        lines.append(f"[{m.position}] {m.speaker}{mark}: {m.text}")
    return "\n".join(lines)


def numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {text}" for i, text in enumerate(items)) or "(none)"


def _request(system: str, user: str, max_tokens: int = 4096) -> ModelRequest:
    return ModelRequest(
        stage=JUDGE_STAGE,
        system=system,
        messages=(Message.user(user),),
        max_tokens=max_tokens,
        temperature=0.0,
    )


def gold_request(trace: Trace) -> ModelRequest:
    return _request(GOLD_SYSTEM, f"Conversation:\n{transcript(trace)}")


def coverage_request(gold: Sequence[str], observations: Sequence[str]) -> ModelRequest:
    return _request(
        COVERAGE_SYSTEM, f"Gold facts:\n{numbered(gold)}\n\nObservations:\n{numbered(observations)}"
    )


def quality_request(trace: Trace, observations: Sequence[str]) -> ModelRequest:
    return _request(
        QUALITY_SYSTEM,
        f"Conversation:\n{transcript(trace)}\n\nObservations:\n{numbered(observations)}",
    )


def molecular_request(observations: Sequence[str]) -> ModelRequest:
    return _request(MOLECULAR_SYSTEM, f"Observations:\n{numbered(observations)}")
