"""What the deriver shows a model and what it accepts back, whichever model it is.

The batch format is parsed as well as read: the local reasoner parses it, and record/replay
cassettes key on it. Each message block states its content length, so content is shown raw (a
model must copy spans from exactly what it sees, which escaping would break) and still parses
back unambiguously, whatever delimiter-like text it contains.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from mnemo_schema import grounding


class ExtractedObservation(BaseModel):
    """One explicit fact about the target peer, grounded in a verbatim span of one message."""

    fact: str = Field(
        description="One atomic, self-contained claim in the third person naming the target peer."
    )
    source_message_index: int = Field(description="The index of the message stating the fact.")
    source_span: str = Field(
        description="Text copied verbatim from that message which states the fact."
    )


class DeriverOutput(BaseModel):
    """Explicit facts about the target peer stated in the batch's non-context messages."""

    observations: list[ExtractedObservation]


@dataclass(frozen=True)
class BatchMessage:
    """A message as the deriver shows it; context messages are earlier turns of other speakers."""

    index: int
    peer_id: str
    content: str
    created_at: datetime
    is_context: bool = False


_HEADER = re.compile(
    r'<message index="(?P<index>-?\d+)" speaker=(?P<speaker>"(?:[^"\\]|\\.)*") '
    r'target="(?P<target>yes|no)" time="(?P<time>[^"]+)" '
    r'context-only="(?P<context>yes|no)" chars="(?P<chars>\d+)">\n'
)
_OPEN = re.compile(r'<batch target=(?P<target>"(?:[^"\\]|\\.)*") messages="(?P<count>\d+)">\n')
_MESSAGE_END = "\n</message>\n"
_BATCH_END = "</batch>"
_FLAG = {True: "yes", False: "no"}


def render_batch(target: str, messages: Sequence[BatchMessage]) -> str:
    """The batch as the model reads it, target peer marked; ``parse_batch`` inverts it."""
    # Ids are JSON-quoted: any quote or newline in them is escaped, so a header stays one line.
    parts = [f'<batch target={_quote(target)} messages="{len(messages)}">\n']
    for m in messages:
        parts.append(
            f'<message index="{m.index}" speaker={_quote(m.peer_id)} '
            f'target="{_FLAG[m.peer_id == target]}" time="{m.created_at.isoformat()}" '
            f'context-only="{_FLAG[m.is_context]}" chars="{len(m.content)}">\n'
            f"{m.content}{_MESSAGE_END}"
        )
    parts.append(_BATCH_END)
    return "".join(parts)


def parse_batch(text: str) -> tuple[str, list[BatchMessage]]:
    """The target peer and messages of a rendered batch; ``ValueError`` if it is not one."""
    opened = _OPEN.match(text)
    if opened is None:
        raise ValueError("not a rendered batch: missing the <batch> header")
    target = _unquote(opened["target"])
    pos = opened.end()
    messages: list[BatchMessage] = []
    for _ in range(int(opened["count"])):
        header = _HEADER.match(text, pos)
        if header is None:
            raise ValueError(f"malformed message header at offset {pos}")
        start = header.end()
        end = start + int(header["chars"])
        if not text.startswith(_MESSAGE_END, end):
            raise ValueError(f"message at offset {pos} does not end where its length says")
        speaker = _unquote(header["speaker"])
        if (header["target"] == "yes") != (speaker == target):
            raise ValueError(f"message at offset {pos} is marked inconsistently with the target")
        messages.append(
            BatchMessage(
                index=int(header["index"]),
                peer_id=speaker,
                content=text[start:end],
                created_at=datetime.fromisoformat(header["time"]),
                is_context=header["context"] == "yes",
            )
        )
        pos = end + len(_MESSAGE_END)
    if text[pos:] != _BATCH_END:
        raise ValueError(f"unexpected text after the last message at offset {pos}")
    return target, messages


def find_batch(text: str) -> str | None:
    """The rendered batch inside a longer prompt, if there is one."""
    start = text.find("<batch target=")
    end = text.rfind(_BATCH_END)
    if start < 0 or end < start:
        return None
    return text[start : end + len(_BATCH_END)]


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _unquote(quoted: str) -> str:
    # The header patterns only match a JSON string literal, so this always yields a str.
    return str(json.loads(quoted))


# Curly quotes and en/em dashes fold to their ASCII forms: models and keyboards swap them freely,
# and a span must not fail grounding over typography.
# The grounding rule is the store's: the deriver checks spans exactly as the store will.
span_in_message = grounding.span_in_message


_RULES = """\
You are the deriver of Mnemo, a memory system for AI agents. You read a batch of conversation \
messages and record the explicit facts it states about one person, the target peer, so that \
they can be remembered long after the conversation is gone.

# Input
The batch opens with <batch target="NAME" ...>. Each message sits in its own <message> block \
giving its index, its speaker, whether the speaker is the target (target="yes"), its timestamp \
and whether it is context-only; the block's text is the message exactly as it was written.

# Task
- Extract facts about the target peer only, and only from messages the target wrote that are \
not context-only. Read everything else (other speakers, context-only messages) to understand \
those messages, never as a source of facts.
- Explicit only: record what the target plainly states: facts about themselves, their plans, \
preferences, possessions, relationships, events, feelings and opinions. Do not infer, guess, \
generalise, diagnose or speculate; a later stage reasons over what you record.
- Attribution: never attribute to the target what another speaker said, did or owns. If the \
target only reacts to someone else's news, that news is not a fact about the target.
- Skip greetings, thanks, small talk and remarks about the conversation itself.

# Each observation
- Atomic: one claim. Split "I live in Porto and work as a nurse" into two observations.
- Self-contained: in the third person, naming the target instead of "I", "me" or "my", and \
replacing every pronoun or vague reference you can resolve from the batch with what it refers \
to. It must make sense to a reader who has never seen the conversation.
- Dates: resolve relative times against the timestamp of the message that states them. \
"yesterday" in a message of 8 May 2023 is "on 7 May 2023"; "last week" is "in the week of \
1 May 2023" (weeks start on Monday); "next month" is "in June 2023"; "last Friday" is the \
latest Friday before the message; "three years ago" is "in 2020". For a duration that is still \
running ("for six years now"), state the date it holds at ("as of 2 February 2025"). Never \
leave "today", "last week" or a bare weekday unresolved when the timestamp settles it.

# Output
Call the tool you are given exactly once. Give each observation:
- fact: the observation, written as above;
- source_message_index: the index of the target's message that states it;
- source_span: the shortest passage that states it, copied character for character from that \
message (do not fix spelling, case or punctuation, do not join text from two places). An \
observation whose span is not found verbatim in its message is discarded.
If the batch states nothing new about the target, call the tool with an empty list.
"""


def _example(
    target: str,
    when: str,
    turns: list[tuple[str, str, bool]],
    facts: list[tuple[str, int, str]],
    note: str = "",
) -> str:
    start = datetime.fromisoformat(when)
    batch = [
        BatchMessage(i, peer, text, start + timedelta(minutes=i), ctx)
        for i, (peer, text, ctx) in enumerate(turns)
    ]
    output = DeriverOutput(
        observations=[
            ExtractedObservation(fact=f, source_message_index=i, source_span=s) for f, i, s in facts
        ]
    )
    shown = f"{render_batch(target, batch)}\n\nTool input:\n{output.model_dump_json(indent=2)}\n"
    return shown + (f"Note: {note}\n" if note else "")


EXAMPLES = (
    _example(
        "Priya",
        "2024-03-11T09:12:00+00:00",
        [
            ("Tom", "Morning! How was your weekend?", True),
            (
                "Priya",
                "Pretty good! My brother Arjun flew in from Toronto on Saturday and we went "
                "bouldering together.\nStill sore today, honestly.",
                False,
            ),
        ],
        [
            ("Priya has a brother named Arjun.", 1, "My brother Arjun"),
            (
                "Priya's brother Arjun flew in from Toronto on 9 March 2024.",
                1,
                "My brother Arjun flew in from Toronto on Saturday",
            ),
            (
                "Priya went bouldering with Arjun on 9 March 2024.",
                1,
                "we went bouldering together",
            ),
            ("Priya was sore on 11 March 2024.", 1, "Still sore today"),
        ],
    ),
    _example(
        "Sam",
        "2023-10-04T18:40:00+00:00",
        [
            ("Dana", "Guess what, I got promoted to team lead!", True),
            (
                "Sam",
                "No way, congrats!! I'm still job hunting after the layoff last month, but I "
                "have an interview at a bakery next Tuesday.",
                False,
            ),
            ("Sam", "Do you think they'd mind that I've never worked in a kitchen?", False),
        ],
        [
            ("Sam is looking for a job.", 1, "I'm still job hunting"),
            ("Sam was laid off in September 2023.", 1, "after the layoff last month"),
            (
                "Sam has a job interview at a bakery on 10 October 2023.",
                1,
                "I have an interview at a bakery next Tuesday",
            ),
            ("Sam has never worked in a kitchen.", 2, "I've never worked in a kitchen"),
        ],
        "Dana's promotion is not a fact about Sam, and Sam's question still states a fact.",
    ),
    _example(
        "Leo",
        "2025-02-02T20:05:00+00:00",
        [
            ("Leo", "I've been vegetarian for six years now. Not a fan of mushrooms though", False),
            ("Ana", "Ha, more for me then! Are you coming to Maya's party?", True),
            ("Leo", "Maybe. My sister says I should, but I might just stay in.", False),
        ],
        [
            (
                "As of 2 February 2025, Leo has been vegetarian for six years.",
                0,
                "I've been vegetarian for six years now",
            ),
            ("Leo does not like mushrooms.", 0, "Not a fan of mushrooms"),
            ("Leo has a sister.", 2, "My sister"),
            ("Leo's sister thinks Leo should go to Maya's party.", 2, "My sister says I should"),
            ("Leo might stay in instead of going to Maya's party.", 2, "I might just stay in"),
        ],
        "Ana's message is context: it tells what Leo's sister means, but states nothing about Leo.",
    ),
)

DERIVER_PROMPT = (
    _RULES
    + "\n# Examples\n"
    + "".join(f"\n## Example {n}\n{text}" for n, text in enumerate(EXAMPLES, start=1))
)
