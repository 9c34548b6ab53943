"""The local reasoner's dialectic skill: extractive answers from the observations it was shown.

This is a heuristic, not a language model. It reads the question and every observation line
(``[id] (level, YYYY-MM-DD) content``) in the conversation, scores each observation by the
question words it shares, and answers with the best ones verbatim, citing their ids. For
questions about the present ("now", "currently", "latest") the most recent matching observation
leads and older values are reported as replaced; a matching contradiction flag makes the
answer a conflict report. With no overlap it says it does not know. It never calls a search
tool, so it answers on its first turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    Stage.DIALECTIC_MINIMAL, Stage.DIALECTIC_LOW, Stage.DIALECTIC_MEDIUM, Stage.DIALECTIC_HIGH,
    Stage.DIALECTIC_MAX,
)  # fmt: skip
ANSWER_TOOL = "answer"
MAX_CITED = 3

_QUESTION = re.compile(r"<question>(.*?)</question>", re.S)
_PEER = re.compile(r"<peer>(.*?)</peer>", re.S)
_LINE = re.compile(r"^\[(?P<id>[^\]\s]+)\] \((?P<level>\w+), (?P<date>[\d-]+)\) (?P<content>.+)$")
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


@dataclass(frozen=True)
class Seen:
    id: str
    level: str
    date: str
    content: str


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """The content words of ``text``, lower-cased and crudely stemmed."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _texts(request: ModelRequest) -> list[str]:
    out: list[str] = []
    for message in request.messages:
        if message.role != "user":
            continue
        for block in message.content:
            if isinstance(block, TextBlock):
                out.append(block.text)
            elif isinstance(block, ToolResultBlock) and not block.is_error:
                out.append(block.content)
    return out


def observations_in(texts: list[str]) -> list[Seen]:
    """Every observation line in ``texts``, first sighting kept."""
    seen: dict[str, Seen] = {}
    for text in texts:
        for line in text.splitlines():
            m = _LINE.match(line.strip())
            if m and m["id"] not in seen:
                seen[m["id"]] = Seen(m["id"], m["level"], m["date"], m["content"].strip())
    return list(seen.values())


def compose(question: str, observations: list[Seen], peer: str = "") -> tuple[str, list[str]]:
    """The extractive answer to ``question`` about ``peer`` and the ids it cites."""
    # The peer's name is in nearly every observation, so it says nothing about relevance.
    asked = terms(question) - terms(peer)
    scored = [(len(asked & terms(o.content)), o) for o in observations]
    matching = [(s, o) for s, o in scored if s > 0]
    if not matching:
        return (
            "I don't know: nothing I have observed about this peer addresses the question.",
            [],
        )
    best = max(s for s, _ in matching)
    # Keep what is nearly as relevant as the best, so related facts travel together.
    kept = [o for s, o in matching if s * 2 >= best]
    conflicts = [o for o in kept if o.level == "contradiction"]
    if conflicts:
        flag = conflicts[0]
        others = [o for o in kept if o is not flag][: MAX_CITED - 1]
        parts = [f"{o.content} (as of {o.date})" for o in others]
        text = "The record conflicts on this: " + flag.content
        if parts:
            text += " Statements: " + "; ".join(parts) + "."
        return text, [flag.id, *(o.id for o in others)]
    if asked & _RECENT or (len(kept) > 1 and _same_subject(kept)):
        kept.sort(key=lambda o: (o.date, len(asked & terms(o.content))))
        latest, older = kept[-1], list(reversed(kept[:-1]))[: MAX_CITED - 1]
        text = f"Most recently ({latest.date}): {_sentence(latest.content)}"
        if older:
            text += " Earlier: " + "; ".join(f"{o.content} ({o.date})" for o in older) + "."
        return text, [latest.id, *(o.id for o in older)]
    chosen = sorted(kept, key=lambda o: -len(asked & terms(o.content)))[:MAX_CITED]
    return " ".join(_sentence(o.content) for o in chosen), [o.id for o in chosen]


def _same_subject(kept: list[Seen]) -> bool:
    """Whether matching facts look like successive values of one thing (they share most words)."""
    first = terms(kept[0].content)
    return all(len(first & terms(o.content)) * 3 >= 2 * len(first) for o in kept[1:])


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else f"{text}."


class LocalDialectic:
    """Answers on the first turn, through the ``answer`` tool when one is offered."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The extractive answer to the request's question."""
        texts = _texts(request)
        found = next((m for t in texts if (m := _QUESTION.search(t))), None)
        question = found.group(1) if found else (texts[0] if texts else "")
        peer = next((m.group(1) for t in texts if (m := _PEER.search(t))), "")
        content, cited = compose(question, observations_in(texts), peer)
        if any(t.name == ANSWER_TOOL for t in request.tools):
            call = ToolCall(
                id="local_answer",
                name=ANSWER_TOOL,
                input={
                    "content": content,
                    "cited_observation_ids": cited,
                    "cited_message_ids": [],
                },
            )
            return ModelResponse(
                tool_calls=(call,), stop_reason="tool_use", usage=Usage(), model=MODEL_NAME
            )
        return ModelResponse(text=content, stop_reason="end_turn", usage=Usage(), model=MODEL_NAME)
