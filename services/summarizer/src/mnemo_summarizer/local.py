"""The local reasoner's summarizer skill: an extractive summary, chosen by rules.

This is a heuristic, not a language model. It reads the summarizer's request (``domain.render``
writes it, ``domain.parse_input`` reads it back), keeps the previous summary's lines that still
fit, and adds the most informative sentences of the new messages, each attributed to its speaker
("Caroline: ..."). A sentence scores by how often its content words recur in the new messages,
with extra weight for names, numbers and dates, first-person statements and decisions;
questions, greetings and short reactions are skipped. Output is one sentence per line in
conversation order, within the word limit. It never paraphrases or merges, so a summary is
long-winded where a model would compress.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.models.local.identity import MODEL_NAME, display_name
from mnemo_runtime.models.local.sentences import (
    addresses_listener,
    is_courtesy,
    is_question,
    split_sentences,
)
from mnemo_runtime.models.ports import ModelRejected, ModelRequest, ModelResponse, Stage, Usage
from mnemo_summarizer.domain import Spoken, SummaryInput, parse_input

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_NUMBER = re.compile(r"\d")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|my|we|we're|we've|our)\b", re.I)
_DECISION = re.compile(
    r"\b(?:decided|decide|plan|planning|planned|going to|gonna|will|promise|agreed|chose|"
    r"started|finished|moved|bought|joined|signed up|got|won|lost|graduated|married|adopt\w*)\b",
    re.I,
)


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_MONTHS = _wordset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday yesterday tomorrow"
)
_STOP = _wordset(
    """a about after again all also am an and any are as at be been before being but by can could
    did do does doing don't for from had has have having he her here hers him his how i i'd i'll
    i'm i've if in into is it it's its just me more most my no not now of oh on one only or our
    out over really so some such than that that's the their them then there these they this those
    to too up us very was we we're were what when where which while who why will with would yeah
    yes you you're your yours lol wow well thanks thank like get got know think much many way
    things thing something lot always ever even still"""
)
_MIN_WORDS = 4


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in _words(text) if w.lower() not in _STOP and len(w) > 2]


def _score(sentence: str, frequency: Counter[str], speakers: frozenset[str]) -> float:
    words = _words(sentence)
    content = _content_words(sentence)
    if not content:
        return 0.0
    base = sum(math.log1p(frequency[w]) for w in set(content))
    # Capitalised words past the first are names and places; the speakers' own names are
    # mostly how they address each other, which says nothing.
    names = sum(1 for w in words[1:] if w[:1].isupper() and w.lower() not in _STOP | speakers)
    dated = sum(1 for w in words if w.lower() in _MONTHS) + (1 if _NUMBER.search(sentence) else 0)
    bonus = 1.5 * names + 2.0 * dated
    bonus += 1.5 if _FIRST_PERSON.search(sentence) else 0.0
    bonus += 1.5 if _DECISION.search(sentence) else 0.0
    # Dividing by sqrt(length) favours dense sentences without starving long informative ones;
    # what a speaker says to or about the listener is mostly reaction, not record.
    score = (base + bonus) / math.sqrt(len(words))
    return score / 2 if addresses_listener(sentence) else score


@dataclass(frozen=True)
class _Candidate:
    position: int
    line: str
    words: int
    score: float


def _candidates(messages: Sequence[Spoken]) -> list[_Candidate]:
    frequency = Counter(w for m in messages for w in _content_words(m.content))
    speakers = frozenset(s for m in messages for s in (m.peer_id.lower(), m.peer_id[:3].lower()))
    out: list[_Candidate] = []
    for m in messages:
        for sentence in split_sentences(m.content):
            n = len(_words(sentence))
            if n < _MIN_WORDS or is_question(sentence) or is_courtesy(sentence):
                continue
            line = f"{display_name(m.peer_id)}: {sentence}"
            score = _score(sentence, frequency, speakers)
            out.append(_Candidate(len(out), line, len(line.split()), score))
    return out


def _choose(candidates: Sequence[_Candidate], budget: int) -> list[_Candidate]:
    """The best-scoring candidates that fit ``budget`` words, back in their original order."""
    chosen: list[_Candidate] = []
    used = 0
    for c in sorted(candidates, key=lambda c: (-c.score, c.position)):
        if used + c.words <= budget:
            chosen.append(c)
            used += c.words
    return sorted(chosen, key=lambda c: c.position)


def _truncate(line: str, limit: int) -> str:
    words = line.split()
    return line if len(words) <= limit else " ".join(words[:limit]) + " ..."


def summarize(given: SummaryInput) -> str:
    """The extractive summary of ``given``, within its word limit."""
    limit = given.word_limit
    new = _candidates(given.messages)
    old_lines = [ln.strip() for ln in (given.previous or "").splitlines() if ln.strip()]
    # The previous summary keeps at most half the budget when there is something new to add,
    # so each update makes room for the newest part of the conversation.
    old_budget = limit // 2 if new else limit
    frequency = Counter(w for ln in old_lines for w in _content_words(ln))
    old = [
        _Candidate(i, ln, len(ln.split()), _score(ln, frequency, frozenset()))
        for i, ln in enumerate(old_lines)
    ]
    kept_old = _choose(old, old_budget)
    used = sum(c.words for c in kept_old)
    kept_new = _choose(new, limit - used)
    lines = [c.line for c in (*kept_old, *kept_new)]
    if not lines:
        best = new[0].line if new else (old_lines[0] if old_lines else "")
        lines = [_truncate(best, limit - 1)] if best else []
    return "\n".join(lines)


class LocalSummarizer:
    """The summarizer skill of the local reasoner."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """An extractive summary for the summarizer's request."""
        prompt = request.messages[-1].text() if request.messages else ""
        try:
            given = parse_input(prompt)
        except ValueError as err:
            raise ModelRejected(f"local summarizer: {err}") from err
        text = summarize(given)
        if not text:
            # Nothing worth keeping: say so rather than return an empty summary.
            names = sorted({display_name(m.peer_id) for m in given.messages})
            text = f"{' and '.join(names) or 'The participants'} exchanged brief messages."
        return ModelResponse(
            text=text,
            stop_reason="end_turn",
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4),
            model=MODEL_NAME,
        )


def local_reasoner() -> LocalReasoner:
    """The local reasoner with this service's skill."""
    return LocalReasoner({Stage.SUMMARIZER: LocalSummarizer()})
