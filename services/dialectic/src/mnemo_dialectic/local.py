"""The local reasoner's dialectic skill: extractive answers from what the agent was shown.

This is a heuristic, not a language model, registered for the dialectic's stages in this
service's ``app.py``. It reads the question and every observation and message line in the
conversation (rendered by ``domain``; read back with ``domain.parse_line``) and keeps the lines
that bear on the question: those sharing its content words, and observations the retrieval
engine found close in meaning (``match``: 1 - cosine distance of their MiniLM vectors), which is
how "What is Alice's job?" finds "Alice works as a nurse". It answers with the best ones
verbatim, citing their ids. For questions about the present ("now", "currently", "latest") the
most recent leads and older values are reported as replaced; a matching contradiction flag makes
the answer a conflict report. When no observation bears on it, it searches the messages once
(when that tool is offered) and answers from a message that does; else it says it does not
know. With a ``response_format`` it fills the schema from the answer (``formats``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnemo_dialectic.domain import Line, parse_line, response_format_in
from mnemo_dialectic.formats import fill
from mnemo_runtime.models.ports import (
    ModelRequest,
    ModelResponse,
    Stage,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    Usage,
)

MODEL_NAME = "local-heuristic"
DIALECTIC_STAGES = (
    Stage.DIALECTIC_MINIMAL,
    Stage.DIALECTIC_LOW,
    Stage.DIALECTIC_MEDIUM,
    Stage.DIALECTIC_HIGH,
    Stage.DIALECTIC_MAX,
)
ANSWER_TOOL = "answer"
SEARCH_MESSAGES = "search_messages"
MAX_CITED = 3
# An observation this close in meaning to the question bears on it even without shared words.
# Chosen on the tuning part only (LoCoMo conv-26, conv-30; python -m mnemo_cli.bench_answers):
# 0.4, 0.5, 0.6, 0.7 answered 8, 8, 8, 6 of 16 paraphrased and 12, 13, 14, 14 of 80 single-hop
# questions; held-out conv-41, 42, 43 were measured once, after.
MATCH_MIN = 0.6
NO_ANSWER = "I don't know: nothing I have observed about this peer addresses the question."

_QUESTION = re.compile(r"<question>(.*?)</question>", re.S)
_PEER = re.compile(r"<peer>(.*?)</peer>", re.S)
_WORD = re.compile(r"[a-z0-9]+")
_RECENT = frozenset(
    [
        "now",
        "currently",
        "current",
        "latest",
        "recently",
        "still",
        "anymore",
        "today",
        "nowadays",
        "these",
        "days",
    ]
)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "i",
        "you",
        "he",
        "she",
        "it",
        "we",
        "they",
        "me",
        "him",
        "her",
        "them",
        "my",
        "your",
        "his",
        "its",
        "our",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "this",
        "that",
        "these",
        "those",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "about",
        "from",
        "into",
        "over",
        "after",
        "before",
        "and",
        "or",
        "but",
        "if",
        "so",
        "than",
        "then",
        "there",
        "here",
        "not",
        "no",
        "any",
        "some",
        "all",
        "each",
        "more",
        "most",
        "other",
        "such",
        "only",
        "own",
        "same",
        "too",
        "very",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "just",
        "also",
        "ever",
        "tell",
        "know",
        "s",
        "t",
        "don",
        "ll",
        "re",
        "ve",
        "d",
        "m",
    ]
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """The content words of ``text``, lower-cased and crudely stemmed."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


@dataclass(frozen=True)
class Answer:
    content: str
    observation_ids: list[str]
    message_ids: list[str]

    @property
    def found(self) -> bool:
        return bool(self.observation_ids or self.message_ids)


def _relevance(asked: set[str], line: Line) -> float:
    """Shared content words (each counts 1) plus closeness in meaning when it is high enough."""
    shared = len(asked & terms(line.content))
    close = line.match if line.match is not None and line.match >= MATCH_MIN else 0.0
    return shared + 2.0 * close


def compose(question: str, lines: list[Line], peer: str = "") -> Answer:
    """The extractive answer to ``question`` about ``peer``, citing what it rests on."""
    # The peer's name is in nearly every observation, so it says nothing about relevance.
    asked = terms(question) - terms(peer)
    observations = [ln for ln in lines if ln.kind != "message"]
    scored = [(_relevance(asked, o), o) for o in observations]
    matching = [(s, o) for s, o in scored if s > 0]
    if not matching:
        return _from_messages(asked, [ln for ln in lines if ln.kind == "message"])
    best = max(s for s, _ in matching)
    # Keep what is nearly as relevant as the best, so related facts travel together.
    kept = [o for s, o in matching if s * 2 >= best]
    rank = {o.id: s for s, o in matching}
    conflicts = [o for o in kept if o.kind == "contradiction"]
    if conflicts:
        flag = conflicts[0]
        others = [o for o in kept if o is not flag][: MAX_CITED - 1]
        parts = [f"{o.content} (as of {o.date})" for o in others]
        text = "The record conflicts on this: " + flag.content
        if parts:
            text += " Statements: " + "; ".join(parts) + "."
        return Answer(text, [flag.id, *(o.id for o in others)], [])
    if asked & _RECENT or (len(kept) > 1 and _same_subject(kept)):
        kept.sort(key=lambda o: (o.date, rank[o.id]))
        latest, older = kept[-1], list(reversed(kept[:-1]))[: MAX_CITED - 1]
        text = f"Most recently ({latest.date}): {_sentence(latest.content)}"
        if older:
            text += " Earlier: " + "; ".join(f"{o.content} ({o.date})" for o in older) + "."
        return Answer(text, [latest.id, *(o.id for o in older)], [])
    chosen = sorted(kept, key=lambda o: -rank[o.id])[:MAX_CITED]
    return Answer(" ".join(_sentence(o.content) for o in chosen), [o.id for o in chosen], [])


def _from_messages(asked: set[str], messages: list[Line]) -> Answer:
    """The messages sharing the most question words, in the speaker's own words."""
    scored = [(len(asked & terms(m.content)), m) for m in messages]
    best = max((s for s, _ in scored), default=0)
    if best == 0:
        return Answer(NO_ANSWER, [], [])
    chosen = [m for s, m in scored if s == best][:MAX_CITED]
    text = " ".join(f"{m.peer} said ({m.date}): {_sentence(m.content)}" for m in chosen)
    return Answer(text, [], [m.id for m in chosen])


def _same_subject(kept: list[Line]) -> bool:
    """Whether matching facts look like successive values of one thing (they share most words)."""
    first = terms(kept[0].content)
    return all(len(first & terms(o.content)) * 3 >= 2 * len(first) for o in kept[1:])


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _texts(request: ModelRequest) -> tuple[list[str], bool]:
    """The user turns' texts and tool results, and whether any tool result came back."""
    out: list[str] = []
    searched = False
    for message in request.messages:
        if message.role != "user":
            continue
        for block in message.content:
            if isinstance(block, TextBlock):
                out.append(block.text)
            elif isinstance(block, ToolResultBlock):
                searched = True
                if not block.is_error:
                    out.append(block.content)
    return out, searched


def lines_in(texts: list[str]) -> list[Line]:
    """Every observation and message line in ``texts``, first sighting kept."""
    seen: dict[str, Line] = {}
    for text in texts:
        for raw in text.splitlines():
            line = parse_line(raw)
            if line is not None:
                seen.setdefault(line.id, line)
    return list(seen.values())


class LocalDialectic:
    """Answers on the first turn, or on the second after one message search."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The extractive answer to the request's question (or the search that may find one)."""
        texts, searched = _texts(request)
        found = next((m for t in texts if (m := _QUESTION.search(t))), None)
        question = found.group(1) if found else (texts[0] if texts else "")
        peer = next((m.group(1) for t in texts if (m := _PEER.search(t))), "")
        answer = compose(question, lines_in(texts), peer)
        offered = {t.name for t in request.tools}
        if not answer.found and not searched and SEARCH_MESSAGES in offered:
            call = ToolCall(
                id="local_search", name=SEARCH_MESSAGES, input={"query": question, "top_k": 8}
            )
            return _calls(call)
        schema = next((f for t in texts if (f := response_format_in(t)) is not None), None)
        content = answer.content if schema is None else fill(schema, answer.content, answer.found)
        if ANSWER_TOOL in offered:
            return _calls(
                ToolCall(
                    id="local_answer",
                    name=ANSWER_TOOL,
                    input={
                        "content": content,
                        "cited_observation_ids": answer.observation_ids,
                        "cited_message_ids": answer.message_ids,
                    },
                )
            )
        return ModelResponse(text=content, stop_reason="end_turn", usage=Usage(), model=MODEL_NAME)


def _calls(call: ToolCall) -> ModelResponse:
    return ModelResponse(
        tool_calls=(call,), stop_reason="tool_use", usage=Usage(), model=MODEL_NAME
    )
